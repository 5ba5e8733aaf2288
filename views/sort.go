package views

import (
	"net/url"
	"slices"
	"strings"
)

// Sort is the order a list is shown in, as its page's address asks: ?sort=key, or ?sort=-key
// for the reverse. The column headers link to the other orders and keep the rest of the query.
type Sort struct {
	Key   string
	Desc  bool
	path  string
	query url.Values
}

// SortOf reads the order of the list at path from query; a key not among keys gives def (its
// reverse when def starts with "-").
func SortOf(path string, query url.Values, def string, keys ...string) Sort {
	s := Sort{path: path, query: query}
	raw := query.Get("sort")
	if !slices.Contains(keys, strings.TrimPrefix(raw, "-")) {
		raw = def
	}
	s.Desc = strings.HasPrefix(raw, "-")
	s.Key = strings.TrimPrefix(raw, "-")
	return s
}

// Link is the address of the list sorted by key: ascending, or descending when it is sorted
// ascending by key already.
func (s Sort) Link(key string) string {
	q := url.Values{}
	for k, v := range s.query {
		q[k] = v
	}
	if s.Key == key && !s.Desc {
		key = "-" + key
	}
	q.Set("sort", key)
	return s.path + "?" + q.Encode()
}

// Direction says whether the list is sorted by the column key, and which way: ascending,
// descending or none, as a header's aria-sort says it.
func (s Sort) Direction(key string) string {
	switch {
	case s.Key != key:
		return "none"
	case s.Desc:
		return "descending"
	}
	return "ascending"
}

// SortRows sorts rows in place by the comparison of s's key in by, ties keeping their order;
// rows stay as they are when by has no comparison for the key.
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
