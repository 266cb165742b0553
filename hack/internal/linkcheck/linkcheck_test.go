package linkcheck

import (
	"slices"
	"testing"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../../.."

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The two commands":                        "the-two-commands",
		"`make demo` — the main job":              "make-demo--the-main-job",
		"Executors (`gantry_executor`)":           "executors-gantry_executor",
		"Workspaces (modelled on KAITO)":          "workspaces-modelled-on-kaito",
		"A cluster that cannot be reached: `x`":   "a-cluster-that-cannot-be-reached-x",
		"[Linked](docs/index.md) heading":         "linked-heading",
		"Supported Terraform and OpenTofu CLIs":   "supported-terraform-and-opentofu-clis",
		"<a id=\"x\"></a>Nested Schema for `a.b`": "nested-schema-for-ab",
		"Déjà vu, 1.8+":                           "déjà-vu-18",
		"  trailing spaces are not part of it   ": "trailing-spaces-are-not-part-of-it",
	} {
		if got := Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestAnchorsRepeatedHeadingsAndIDs(t *testing.T) {
	got := Anchors("# A\n## A\n```\n# not a heading\n```\n### A ###\n<a id=\"nestedatt--x\"></a>\n")
	for _, want := range []string{"a", "a-1", "a-2", "nestedatt--x"} {
		if !got[want] {
			t.Errorf("Anchors: no %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("Anchors took a heading from a code block: %v", got)
	}
}

// The fixture holds each kind of link that resolves and one of each kind that does not: the
// checker must report exactly the broken ones, so a green run on the tree means something.
func TestFixtureReportsBrokenLinksAndAnchors(t *testing.T) {
	root := "testdata/tree"
	files, err := Docs(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"README.md", "docs/guides/ok.md", "templates/guides/ok.md.tmpl"}; !slices.Equal(files, want) {
		t.Fatalf("Docs = %v, want %v", files, want)
	}
	problems, err := Check(root, files)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "Check", problems, []string{
		`README.md:15: link "docs/guides/gone.md": docs/guides/gone.md does not exist`,
		`README.md:16: link "docs/guides/ok.md#no-such-heading": docs/guides/ok.md has no heading or id "no-such-heading"`,
		`README.md:19: link "docs/guides/missing.md": docs/guides/missing.md does not exist`,
		`templates/guides/ok.md.tmpl:4: link "other.md": docs/guides/other.md does not exist`,
	})
	problems, err = CheckGuides(root, files)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "CheckGuides", problems, []string{
		`README.md:15: names the guide "guides/gone.md": docs/guides/gone.md does not exist`,
		`README.md:17: names the guide "guides/absent.md": docs/guides/absent.md does not exist`,
		`README.md:17: names "the Imaginary guide": no guide has that title (guides: Okay guide)`,
		`README.md:19: names the guide "guides/missing.md": docs/guides/missing.md does not exist`,
	})
}

// TestTree: the repository's own pages, as a reader follows them.
func TestTree(t *testing.T) {
	files, err := Docs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") || !slices.Contains(files, "docs/index.md") {
		t.Fatalf("Docs(%s) = %v: README.md or docs/index.md missing (wrong root?)", repoRoot, files)
	}
	problems, err := Check(repoRoot, files)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "links and anchors", problems, nil)

	sources, err := Sources(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	problems, err = CheckGuides(repoRoot, append(files, sources...))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "guides named by path or title", problems, nil)

	problems, err = CheckQuotes(repoRoot, "README.md")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "the README's quoted examples", problems, nil)
}

func TestCheckQuotesReportsAnEditedExample(t *testing.T) {
	problems, err := CheckQuotes("testdata/quotes", "page.md")
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "CheckQuotes", problems, []string{
		"page.md:9: the hcl block is not a verbatim part of any examples/**/*.tf (2 lines)",
	})
}

// expect fails the test unless problems are exactly want (in order), listing both.
func expect(t *testing.T, what string, problems []Problem, want []string) {
	t.Helper()
	got := make([]string, 0, len(problems))
	for _, p := range problems {
		got = append(got, p.String())
	}
	if slices.Equal(got, want) || len(got) == 0 && len(want) == 0 {
		return
	}
	t.Errorf("%s: got %d problems, want %d", what, len(got), len(want))
	for _, g := range got {
		t.Errorf("  got:  %s", g)
	}
	for _, w := range want {
		t.Errorf("  want: %s", w)
	}
}
