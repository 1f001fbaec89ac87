package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// search= is Django REST Framework's SearchFilter: every term (split on
// spaces and commas, a quoted phrase whole) must appear, ignoring letter
// case, in the code or the name (or an extra string field with an
// icontains filter); it combines with the other filters.
func TestList_SearchNeedsEveryTermInSomeSearchedField(t *testing.T) {
	forEach(t, func(t *testing.T, a *api, r res) {
		hr := a.create(r, "HR-BERLIN", "Human Resources", nil)
		pay := a.create(r, "PAY-BERLIN", "Payroll and Human Affairs", nil)
		a.create(r, "HR-PARIS", "Ressources Humaines", nil)
		ids := func(q string) []int {
			var out []int
			for _, rec := range a.list(r, q).Data {
				out = append(out, rec.ID)
			}
			slices.Sort(out)
			return out
		}
		for q, want := range map[string][]int{
			"search=" + url.QueryEscape("human berlin"):                               {hr, pay},
			"search=" + url.QueryEscape("HUMAN,berlin"):                               {hr, pay},
			"search=" + url.QueryEscape(`"human resources"`):                          {hr},
			"search=" + url.QueryEscape("berlin payroll"):                             {pay},
			"search=" + url.QueryEscape("nowhere"):                                    nil,
			"search=" + url.QueryEscape("human") + "&" + r.Fields.Code + "=HR-BERLIN": {hr},
			"search=": {hr, pay, ids("")[2]},
		} {
			if got := ids(q + "&page_size=100"); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", q, got, want)
			}
		}
		if lb := a.list(r, "search=berlin&page_size=1"); lb.Count != 2 {
			t.Errorf("the count of a search: %d, want 2", lb.Count)
		}
		wantError(t, a.do(http.MethodGet, r.query("search=a%00b"), nil), http.StatusBadRequest, "search")
	})
}
