// Package linkcheck checks the repository's Markdown as a reader meets it on GitHub and on the
// Terraform Registry: every relative link and #anchor resolves, every guide a page or a schema
// description names by path exists, and every guide named by title ("the Model presets guide")
// is one of the guides. `make test` runs it (hack/test.sh runs every package but provider/).
package linkcheck

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Problem is one broken reference: where it is and what is wrong.
type Problem struct {
	File string // slash-separated, relative to the checked root
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Msg) }

// Docs returns the Markdown files a reader follows links in, relative to root and sorted:
// README.md, CONTRIBUTING.md and DESIGN.md where they exist, docs/**/*.md and
// templates/**/*.tmpl. It returns an error only when a directory cannot be walked.
func Docs(root string) ([]string, error) {
	var files []string
	for _, f := range []string{"README.md", "CONTRIBUTING.md", "DESIGN.md"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			files = append(files, f)
		}
	}
	for dir, suffix := range map[string]string{"docs": ".md", "templates": ".tmpl"} {
		found, err := walk(root, dir, suffix)
		if err != nil {
			return nil, err
		}
		files = append(files, found...)
	}
	sort.Strings(files)
	return files, nil
}

// walk returns the files under root/dir whose names end in suffix, relative to root and
// slash-separated; a missing dir gives none, and an error is returned only when walking fails.
func walk(root, dir, suffix string) ([]string, error) {
	var files []string
	if _, err := os.Stat(filepath.Join(root, dir)); os.IsNotExist(err) {
		return nil, nil
	}
	err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, suffix) {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// page is one Markdown file as the checker reads it: its lines with code blocks, code spans and
// template actions blanked, the directory its relative links resolve from, and its anchors.
type page struct {
	file  string   // as given, relative to root
	base  string   // the directory links resolve from, relative to root
	lines []string // prose only
}

// pageDir returns the directory a file's relative links resolve from: its own, or for a
// tfplugindocs template (templates/X.md.tmpl) that of the page it renders (docs/X.md).
func pageDir(file string) string {
	return path.Dir(rendered(file))
}

// rendered returns the path of the page a file is read as: docs/X.md for templates/X.md.tmpl,
// the file itself otherwise.
func rendered(file string) string {
	if rest, ok := strings.CutPrefix(file, "templates/"); ok && strings.HasSuffix(rest, ".tmpl") {
		return "docs/" + strings.TrimSuffix(rest, ".tmpl")
	}
	return file
}

// Check returns the broken relative links and anchors of files (relative to root): a target
// that does not exist, or an #anchor that no heading or id="..." of the target page makes.
// Links with a scheme (https:, mailto:) and template placeholders ({{ ... }}) are not checked.
// It returns an error only when a file cannot be read.
func Check(root string, files []string) ([]Problem, error) {
	anchors := anchorCache{root: root, byFile: map[string]map[string]bool{}}
	var problems []Problem
	for _, f := range files {
		p, err := readPage(root, f)
		if err != nil {
			return nil, err
		}
		for i, line := range p.lines {
			for _, target := range linkTargets(line) {
				if msg := anchors.resolve(p, target); msg != "" {
					problems = append(problems, Problem{File: f, Line: i + 1, Msg: msg})
				}
			}
		}
	}
	return problems, nil
}

// readPage reads root/file and returns it as a page; error when it cannot be read.
func readPage(root, file string) (page, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return page{}, err
	}
	return page{file: file, base: pageDir(file), lines: prose(string(b))}, nil
}

var (
	fence  = regexp.MustCompile("^ {0,3}(```|~~~)")
	action = regexp.MustCompile(`\{\{.*?\}\}`)
	// inlineLink matches the end of an inline link or image, "](target)": its text may have
	// begun on an earlier line.
	inlineLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	refDef     = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
	href       = regexp.MustCompile(`<a\s[^>]*href="([^"]*)"`)
	scheme     = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)
)

// prose returns the lines of a Markdown text with what is not prose blanked (kept as empty
// lines, so line numbers stay): YAML front matter, fenced code blocks, code spans and template
// actions.
func prose(text string) []string {
	lines := strings.Split(text, "\n")
	out := make([]string, len(lines))
	inFence, inFront := false, len(lines) > 0 && strings.TrimSpace(lines[0]) == "---"
	for i, line := range lines {
		switch {
		case inFront:
			inFront = i == 0 || strings.TrimSpace(line) != "---"
		case fence.MatchString(line):
			inFence = !inFence
		case !inFence:
			out[i] = action.ReplaceAllString(stripCodeSpans(line), "")
		}
	}
	return out
}

// stripCodeSpans returns line without its code spans (`x`, “x“); an unclosed run of
// backticks is kept as text, as CommonMark does.
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := run(line, i)
		end := closing(line, i+n, n)
		if end < 0 {
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		i = end + n
	}
	return b.String()
}

// run returns how many backticks start at line[i].
func run(line string, i int) int {
	n := 0
	for i+n < len(line) && line[i+n] == '`' {
		n++
	}
	return n
}

// closing returns the index of the next run of exactly n backticks at or after from, or -1.
func closing(line string, from, n int) int {
	for j := from; j < len(line); {
		if line[j] != '`' {
			j++
			continue
		}
		m := run(line, j)
		if m == n {
			return j
		}
		j += m
	}
	return -1
}

// linkTargets returns the targets of the inline links, images, reference definitions and
// <a href> of a prose line.
func linkTargets(line string) []string {
	var targets []string
	for _, re := range []*regexp.Regexp{inlineLink, refDef, href} {
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// anchorCache holds the anchors of each page read so far, keyed by path relative to root.
type anchorCache struct {
	root   string
	byFile map[string]map[string]bool
}

// resolve returns what is wrong with a link target found on page p ("" when it resolves or is
// not checked: an external URL, a placeholder, an empty target).
func (c *anchorCache) resolve(p page, target string) string {
	if target == "" || scheme.MatchString(target) || strings.Contains(target, "{{") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	file, _, _ = strings.Cut(file, "?")
	if f, err := url.PathUnescape(file); err == nil {
		file = f
	}
	dest := rendered(p.file)
	if file != "" {
		dest = path.Join(p.base, file)
		if strings.HasPrefix(dest, "../") || dest == ".." {
			return fmt.Sprintf("link %q leaves the repository", target)
		}
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(dest))); err != nil {
			return fmt.Sprintf("link %q: %s does not exist", target, dest)
		}
	}
	if anchor == "" {
		return ""
	}
	ids, err := c.anchors(dest, p)
	if err != nil {
		return fmt.Sprintf("link %q: anchor in %s cannot be checked: %v", target, dest, err)
	}
	if !ids[anchor] {
		return fmt.Sprintf("link %q: %s has no heading or id %q", target, dest, anchor)
	}
	return ""
}

// anchors returns the anchors of the page at dest (relative to root). A link within a template
// to its own page (#x) is checked against the rendered page when it exists, else the template.
// It returns an error when dest is a directory or cannot be read.
func (c *anchorCache) anchors(dest string, from page) (map[string]bool, error) {
	if ids, ok := c.byFile[dest]; ok {
		return ids, nil
	}
	src := dest
	if dest == rendered(from.file) && dest != from.file {
		if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(dest))); err != nil {
			src = from.file
		}
	}
	b, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(src)))
	if err != nil {
		return nil, err
	}
	ids := Anchors(string(b))
	c.byFile[dest] = ids
	return ids, nil
}

var (
	heading  = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$`)
	idAttr   = regexp.MustCompile(`<a\s[^>]*(?:id|name)="([^"]+)"`)
	textLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	tag      = regexp.MustCompile(`<[^>]*>`)
)

// Anchors returns the anchors a Markdown text makes: the GitHub slug of each ATX heading
// outside code blocks (a repeated one gets -1, -2, ...) and each <a id="..."> or name="...".
func Anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range idAttr.FindAllStringSubmatch(line, -1) {
			ids[m[1]] = true
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := Slug(m[1])
			if n := seen[s]; n > 0 {
				ids[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				ids[s] = true
			}
			seen[s]++
		}
	}
	return ids
}

// Slug returns the anchor GitHub makes for a heading's text: link and tag markup removed,
// lower-cased, each space a '-', and every character but letters, digits, '-' and '_'
// dropped.
func Slug(text string) string {
	text = textLink.ReplaceAllString(text, "$1")
	text = tag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
