package deployweb

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"nimbus/app/kernel/problem"
)

const formSchema = `{"type": "object", "required": ["name"], "properties": {
	"name": {"type": "string", "pattern": "^[a-z]+$"},
	"cores": {"type": "integer", "minimum": 1, "maximum": 8, "default": 2},
	"ratio": {"type": "number"},
	"public": {"type": "boolean", "default": false},
	"size": {"type": "string", "enum": ["s", "m", "l"]},
	"tags": {"type": "array", "items": {"type": "string"}},
	"password": {"type": "string", "x-secret": true}}}`

func post(form url.Values) echo.Context {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return echo.New().NewContext(req, httptest.NewRecorder())
}

func TestFormParams_TypedBySchema(t *testing.T) {
	got, err := formParams(post(url.Values{
		"p.name": {" web "}, "p.cores": {"4"}, "p.ratio": {"0.5"}, "p.public": {"true", "false"},
		"p.size": {"m"}, "p.tags": {`["a","b"]`}, "p.password": {" keep spaces "},
	}), []byte(formSchema))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "web", "cores": 4.0, "ratio": 0.5, "public": true, "size": "m",
		"tags": []any{"a", "b"}, "password": " keep spaces "}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestFormParams_EmptyFieldsKeepTheirValueAndBadOnesAreNamed(t *testing.T) {
	got, err := formParams(post(url.Values{"p.name": {"web"}, "p.cores": {""}, "p.public": {"false"}, "p.password": {""}}), []byte(formSchema))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"name": "web", "public": false}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v: an empty field is not sent, an unticked box is false", got, want)
	}
	_, err = formParams(post(url.Values{"p.cores": {"four"}, "p.tags": {"[a"}}), []byte(formSchema))
	v, ok := err.(*problem.ValidationError)
	if !ok || len(v.Fields) != 2 || v.Fields[0].Field != "parameters.cores" || v.Fields[1].Field != "parameters.tags" {
		t.Fatalf("got %v, want the cores and the tags named", err)
	}
}

func TestParamForm_FieldsFollowTheSchema(t *testing.T) {
	f := paramForm([]byte(formSchema), map[string]any{"cores": 6.0}, []string{"password"}, problem.Invalid("parameters.name", "required", "is required"), nil, false, nil)
	byName := map[string]int{}
	for i, p := range f.Fields {
		byName[p.Name] = i
	}
	field := func(name string) (kind, value, min, max, errMsg string, required bool) {
		p := f.Fields[byName[name]]
		return p.Kind, p.Value, p.Min, p.Max, p.Error, p.Required
	}
	if kind, _, _, _, errMsg, required := field("name"); kind != "text" || !required || errMsg != "is required" {
		t.Errorf("name: %s required=%v error=%q", kind, required, errMsg)
	}
	if kind, value, min, max, _, required := field("cores"); kind != "number" || value != "6" || min != "1" || max != "8" || required {
		t.Errorf("cores: %s %q [%s, %s] required=%v", kind, value, min, max, required)
	}
	if kind, _, _, _, _, _ := field("size"); kind != "select" || len(f.Fields[byName["size"]].Options) != 3 {
		t.Errorf("size: %s %v", kind, f.Fields[byName["size"]].Options)
	}
	if kind, value, _, _, _, required := field("password"); kind != "password" || value != "" || required || f.Fields[byName["password"]].Placeholder != "unchanged" {
		t.Errorf("a secret already set: %s %q required=%v", kind, value, required)
	}
	if kind, _, _, _, _, _ := field("tags"); kind != "json" {
		t.Errorf("tags: %s", kind)
	}
}
