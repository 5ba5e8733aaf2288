package views

import (
	"slices"
	"strings"
)

// Others are the messages of e for fields a form has no place of its own for, in field order:
// they go above the form rather than being lost.
func Others(e Errors, shown ...string) []string {
	var out []string
	for _, k := range SortedErrorKeys(e) {
		if !slices.Contains(shown, k) {
			out = append(out, e[k])
		}
	}
	return out
}

// Sort is the order a list is shown in: by one column's key, descending when Desc.
type Sort struct {
	Key  string
	Desc bool
}

// SortOf reads a list's ?sort= value, "key" or "-key" for descending; a key the list does not
// offer gives def.
func SortOf(query string, def Sort, keys ...string) Sort {
	s := Sort{Key: strings.TrimPrefix(query, "-"), Desc: strings.HasPrefix(query, "-")}
	if !slices.Contains(keys, s.Key) {
		return def
	}
	return s
}

// Href is where a column's header leads: sorted by its key, the other way round when the list
// is sorted by it already.
func (s Sort) Href(key string) string {
	if s.Key == key && !s.Desc {
		return "?sort=-" + key
	}
	return "?sort=" + key
}

// Aria says how a column orders the list, for its header's aria-sort.
func (s Sort) Aria(key string) string {
	switch {
	case s.Key != key:
		return "none"
	case s.Desc:
		return "descending"
	}
	return "ascending"
}

// SortRows orders rows in place by s, with by's comparison for s's key; rows that compare
// equal keep their order.
func SortRows[T any](rows []T, s Sort, by map[string]func(a, b T) int) {
	cmp, ok := by[s.Key]
	if !ok {
		return
	}
	slices.SortStableFunc(rows, func(a, b T) int {
		if s.Desc {
			return cmp(b, a)
		}
		return cmp(a, b)
	})
}

// Fold compares two names as people sort them: case aside.
func Fold(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) }
