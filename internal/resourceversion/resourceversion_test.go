package resourceversion

import "testing"

func TestOlder(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"5", "7", true}, {"7", "5", false}, {"7", "7", false}, {"", "7", false}, {"7", "", false}, {"x", "7", false}, {"9", "10", true}} {
		if got := Older(tc.a, tc.b); got != tc.want {
			t.Errorf("Older(%q,%q) = %v", tc.a, tc.b, got)
		}
	}
}
