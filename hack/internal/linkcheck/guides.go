package linkcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var (
	// guidePath matches a guide named by path, as a link or in prose: docs/guides/x.md,
	// ../guides/x.md, guides/x.md (and templates/guides/x.md.tmpl, whose page is the same guide).
	guidePath = regexp.MustCompile(`(?:^|[^A-Za-z0-9_-])guides/([A-Za-z0-9_.-]+?)\.md`)
	// guideTitle matches a guide named by its title in prose: "the Model presets guide".
	guideTitle = regexp.MustCompile(`\b[Tt]he ([A-Z][A-Za-z0-9 ,-]*?) guide\b`)
	pageTitle  = regexp.MustCompile(`(?m)^page_title:\s*"?([^"\n]+)"?\s*$`)
)

// Sources returns the Go files whose strings reach users as schema and CRD descriptions or
// error messages: the non-test .go files under provider/, internal/ and reconciler/, relative
// to root. It returns an error only when a directory cannot be walked.
func Sources(root string) ([]string, error) {
	var files []string
	for _, dir := range []string{"provider", "internal", "reconciler"} {
		found, err := walk(root, dir, ".go")
		if err != nil {
			return nil, err
		}
		for _, f := range found {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	return files, nil
}

// GuideTitles returns the page titles of the guides (the page_title of each
// templates/guides/*.tmpl, else of each docs/guides/*.md). It returns an error only when a
// guide cannot be read.
func GuideTitles(root string) ([]string, error) {
	var titles []string
	for _, pattern := range []string{"templates/guides/*.tmpl", "docs/guides/*.md"} {
		files, _ := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if m := pageTitle.FindSubmatch(b); m != nil {
				titles = append(titles, strings.TrimSpace(string(m[1])))
			}
		}
		if len(titles) > 0 {
			return titles, nil
		}
	}
	return titles, nil
}

// CheckGuides returns every guide files (relative to root) name that does not exist: a path
// guides/x.md with no docs/guides/x.md, or a title "the X guide" that no guide's page title
// contains (case aside). It returns an error only when a file cannot be read.
func CheckGuides(root string, files []string) ([]Problem, error) {
	titles, err := GuideTitles(root)
	if err != nil {
		return nil, err
	}
	var problems []Problem
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		for i, line := range strings.Split(string(b), "\n") {
			for _, msg := range guideProblems(root, line, titles) {
				problems = append(problems, Problem{File: f, Line: i + 1, Msg: msg})
			}
		}
	}
	return problems, nil
}

// guideProblems returns what is wrong with the guides one line names (none when all exist).
func guideProblems(root, line string, titles []string) []string {
	var msgs []string
	for _, m := range guidePath.FindAllStringSubmatch(line, -1) {
		want := filepath.Join(root, "docs", "guides", m[1]+".md")
		if _, err := os.Stat(want); err != nil {
			msgs = append(msgs, fmt.Sprintf("names the guide %q: docs/guides/%s.md does not exist", "guides/"+m[1]+".md", m[1]))
		}
	}
	for _, m := range guideTitle.FindAllStringSubmatch(line, -1) {
		if !titled(m[1], titles) {
			msgs = append(msgs, fmt.Sprintf("names %q: no guide has that title (guides: %s)", m[0], strings.Join(titles, "; ")))
		}
	}
	return msgs
}

// titled reports whether some title contains name, case aside.
func titled(name string, titles []string) bool {
	for _, t := range titles {
		if strings.Contains(strings.ToLower(t), strings.ToLower(name)) {
			return true
		}
	}
	return false
}
