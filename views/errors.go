package views

import "slices"

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
