package linkcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// CheckQuotes returns a problem for each ```hcl block of file (relative to root) that is not
// a verbatim part of some .tf file under root/examples: a page that quotes an example must
// quote it as it is. It returns an error only when a file cannot be read.
func CheckQuotes(root, file string) ([]Problem, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
	if err != nil {
		return nil, err
	}
	examples, err := walk(root, "examples", ".tf")
	if err != nil {
		return nil, err
	}
	var sources []string
	for _, e := range examples {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e)))
		if err != nil {
			return nil, err
		}
		sources = append(sources, string(src))
	}
	var problems []Problem
	for _, blk := range hclBlocks(string(b)) {
		if !quoted(blk.text, sources) {
			problems = append(problems, Problem{File: file, Line: blk.line,
				Msg: fmt.Sprintf("the hcl block is not a verbatim part of any examples/**/*.tf (%d lines)", strings.Count(blk.text, "\n"))})
		}
	}
	return problems, nil
}

// block is a fenced code block's text and the line (1-based) of its opening fence.
type block struct {
	text string
	line int
}

// hclBlocks returns the ```hcl (or ```terraform) fenced blocks of a Markdown text.
func hclBlocks(text string) []block {
	var blocks []block
	var cur *block
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```hcl" || trimmed == "```terraform"):
			cur = &block{line: i + 1}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return blocks
}

// quoted reports whether text is a part of one of sources.
func quoted(text string, sources []string) bool {
	for _, s := range sources {
		if strings.Contains(s, text) {
			return true
		}
	}
	return false
}
