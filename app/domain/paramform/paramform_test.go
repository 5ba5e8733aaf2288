package paramform

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"nimbus/app/kernel/problem"
)

const schema = `{"type": "object", "required": ["name"], "properties": {
	"name": {"type": "string"}, "cores": {"type": "integer", "maximum": 8, "default": 2},
	"tags": {"type": "array", "items": {"type": "string"}}, "public": {"type": "boolean"},
	"size": {"type": "string", "enum": ["s", "m"]}}}`

func TestRead_TypesByTheSchemaAndLeavesEmptyInputsToTheirDefaults(t *testing.T) {
	form := url.Values{"r.p.name": {" web "}, "r.p.cores": {"4"}, "r.p.tags": {`["a"]`}, "r.p.public": {"false"}, "r.p.size": {""}, "p.name": {"other"}}
	got, err := Read(form, "r.", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got["name"] != "web" || got["cores"] != 4.0 || got["public"] != false || got["tags"].([]any)[0] != "a" {
		t.Fatalf("read %v", got)
	}
}

func TestRead_RefusesWhatDoesNotParseByName(t *testing.T) {
	_, err := Read(url.Values{"p.cores": {"many"}, "p.tags": {`["a",`}}, "", []byte(schema))
	v, ok := err.(*problem.ValidationError)
	if !ok || len(v.Fields) != 2 {
		t.Fatalf("err = %v", err)
	}
	for _, f := range v.Fields {
		if strings.Contains(f.Message, "unexpected") || strings.Contains(f.Message, "invalid character") {
			t.Errorf("%s: %q speaks the parser's words", f.Field, f.Message)
		}
	}
}

func TestBuild_ShowsFilledInputsAndChoices(t *testing.T) {
	f := Build("r.", []byte(schema), map[string]any{"cores": "3"}, map[string]string{"parameters.cores": "too many"},
		map[string]string{"name": "image_catalog", "size": "naming"}, map[string]string{"name": "image_catalog"})
	kinds := map[string]Field{}
	for _, x := range f.Fields {
		kinds[x.Name] = x
	}
	if n := kinds["name"]; n.Kind != "resolved" || n.Resolver != "image_catalog" || n.Required {
		t.Errorf("name: %+v", n)
	}
	if c := kinds["cores"]; c.Kind != "number" || c.Max != "8" || c.Value != "3" || c.Error != "too many" || c.Placeholder != "2" {
		t.Errorf("cores: %+v", c)
	}
	if s := kinds["size"]; s.BoundTo != "naming" || s.Required {
		t.Errorf("size, bound to a resolver the zone does not configure: %+v", s)
	}
	if kinds["size"].Kind != "select" || kinds["public"].Kind != "select" || kinds["tags"].Kind != "json" {
		t.Errorf("kinds: %+v", kinds)
	}
}

// A choice whose values include the empty one offers it once, not again as a blank, so that a
// form with nothing given selects one option.
func TestBuild_AnEmptyChoiceIsOfferedOnce(t *testing.T) {
	f := Build("", []byte(`{"type":"object","properties":{"fail_on":{"type":"string","enum":["","create"],"default":""}}}`), nil, nil, nil, nil)
	var html strings.Builder
	if err := Fields(f).Render(t.Context(), &html); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(html.String(), "selected"); n != 1 {
		t.Fatalf("%d options selected, want 1:\n%s", n, html.String())
	}
}

func TestRead_RefusesNumbersJSONCannotHold(t *testing.T) {
	for _, raw := range []string{"NaN", "Inf", "-Infinity"} {
		_, err := Read(url.Values{"p.name": {"web"}, "p.cores": {raw}}, "", []byte(schema))
		v, ok := err.(*problem.ValidationError)
		if !ok || len(v.Fields) != 1 || v.Fields[0].Field != "parameters.cores" {
			t.Errorf("%s: err = %v, want cores refused", raw, err)
		}
	}
}

const mapSchema = `{"type": "object", "properties": {
	"labels": {"type": "object", "additionalProperties": {"type": "string"}, "default": {"tier": "web"}}}}`

// A map of strings is a textarea of key=value lines, read back as the map it shows.
func TestLayoutAndRead_AMapOfStringsIsKeyValueLines(t *testing.T) {
	f, ok := Layout("", []byte(mapSchema), map[string]any{"labels": map[string]any{"team": "blue", "a": "x=y"}}, nil)
	if !ok || f.Fields[0].Kind != "map" || f.Fields[0].Value != "a=x=y\nteam=blue" || f.Fields[0].Default != "tier=web" {
		t.Fatalf("laid out: %+v", f.Fields)
	}
	got, err := Read(url.Values{"p.labels": {f.Fields[0].Value + "\n\n  owner = ops  \n"}}, "", []byte(mapSchema))
	if err != nil {
		t.Fatal(err)
	}
	labels := got["labels"].(map[string]any)
	if len(labels) != 3 || labels["a"] != "x=y" || labels["team"] != "blue" || labels["owner"] != "ops" {
		t.Fatalf("read %v", labels)
	}

	_, err = Read(url.Values{"p.labels": {"team=blue\nno equals\n=x\nteam=red"}}, "", []byte(mapSchema))
	v, ok := err.(*problem.ValidationError)
	if !ok || len(v.Fields) != 3 {
		t.Fatalf("err = %v", err)
	}
	for i, want := range []string{"line 2: write key=value, such as team=blue", "line 3: the key before = is empty", "line 4: team is given twice"} {
		if v.Fields[i].Field != "parameters.labels" || v.Fields[i].Message != want {
			t.Errorf("problem %d: %+v, want %q", i, v.Fields[i], want)
		}
	}
	// Filled in from the values, the form reads them back.
	form := url.Values{}
	Fill(form, "r.", []byte(mapSchema), map[string]any{"labels": labels})
	if again, err := Read(form, "r.", []byte(mapSchema)); err != nil || len(again["labels"].(map[string]any)) != 3 {
		t.Fatalf("filled %v, read back %v, %v", form, again, err)
	}
	// What was typed comes back as typed, to be corrected.
	if f, _ := Layout("", []byte(mapSchema), Given(url.Values{"p.labels": {"no equals"}}, ""), nil); f.Fields[0].Value != "no equals" {
		t.Fatalf("refilled with %q", f.Fields[0].Value)
	}
}

// A schema's pattern reaches the browser in a form it can compile: with the v flag browsers use,
// an unescaped - at the end of a class is a syntax error, and the browser would check nothing.
func TestFields_APatternTheBrowserCanCompile(t *testing.T) {
	f, ok := Layout("", []byte(`{"type": "object", "properties": {"name": {"type": "string", "pattern": "^[a-z]([a-z0-9-]*[a-z0-9])?$"}}}`), nil, nil)
	if !ok {
		t.Fatal("the schema did not lay out")
	}
	var b strings.Builder
	if err := Fields(f).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	if want := `pattern="^[a-z]([a-z0-9\-]*[a-z0-9])?$"`; !strings.Contains(b.String(), want) {
		t.Fatalf("the field holds no %s: %s", want, b.String())
	}
}
