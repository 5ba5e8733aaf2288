package views

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Secret is how a value the engine or a resolver keeps secret is shown: never the value.
const Secret = "[secret]"

// Values lists a map of parameters or outputs as pages show them, in key order, the keys in
// secret (and any value the engine masked) shown masked.
func Values(m map[string]any, secret ...string) []KeyValue {
	keys := make([]string, 0, len(m)+len(secret))
	for k := range m {
		keys = append(keys, k)
	}
	for _, k := range secret {
		if _, ok := m[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make([]KeyValue, len(keys))
	for i, k := range keys {
		out[i] = KeyValue{Key: k, Value: Value(m[k]), Secret: slices.Contains(secret, k) || m[k] == Secret}
	}
	return out
}

// Titled gives each of kvs the title its key has in titles, such as a schema's "Delay (ms)"
// for delay_ms.
func Titled(kvs []KeyValue, titles map[string]string) []KeyValue {
	for i := range kvs {
		kvs[i].Label = titles[kvs[i].Key]
	}
	return kvs
}

// Value is one value as a person reads it: text as it is, numbers without exponents, lists
// joined by commas, objects as key: value pairs, "—" for nothing. Never JSON punctuation
// around a plain value.
func Value(v any) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case string:
		if v == "" {
			return "—"
		}
		return v
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case json.Number:
		return v.String()
	case int, int32, int64:
		return fmt.Sprint(v)
	case []any:
		if len(v) == 0 {
			return "—"
		}
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = Value(x)
		}
		return strings.Join(parts, ", ")
	case map[string]any:
		if len(v) == 0 {
			return "—"
		}
		kvs := Values(v)
		parts := make([]string, len(kvs))
		for i, kv := range kvs {
			parts[i] = kv.Key + ": " + kv.Value
		}
		return strings.Join(parts, "; ")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// StatusWord is a status as a sentence would say it: awaiting_approval is "awaiting approval".
func StatusWord(status string) string { return strings.ReplaceAll(status, "_", " ") }
