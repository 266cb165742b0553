package provider

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Bounds of the attribute description style (issue 41): a description leads with one sentence
// of what the attribute does, of at most maxLeadSentence characters and ending with '.';
// a description longer than maxUnbrokenDescription characters puts its details in paragraphs
// after that sentence ("lead.\n\ndetails"). A lead of 200 characters is two lines of the
// registry's attribute list and about what an editor's hover shows before it wraps a third time;
// 300 characters is where a one-paragraph description stops being read at a glance.
const (
	maxLeadSentence        = 200
	maxUnbrokenDescription = 300
)

// abbreviations whose '.' does not end a sentence.
var descriptionAbbreviations = []string{"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx."}

// leadSentence returns the first sentence of a description: up to and including the first
// '.' that is followed by white space or the end of the text, is outside a `code span` and
// does not end an abbreviation. ok is false when no such '.' ends a sentence.
func leadSentence(desc string) (lead string, ok bool) {
	inCode := false
	for i := 0; i < len(desc); i++ {
		switch c := desc[i]; {
		case c == '`':
			inCode = !inCode
		case c == '.' && !inCode:
			if i+1 < len(desc) && desc[i+1] != ' ' && desc[i+1] != '\n' {
				continue
			}
			abbrev := false
			for _, a := range descriptionAbbreviations {
				if strings.HasSuffix(desc[:i+1], a) && (i+1 == len(a) || strings.ContainsRune(" (\n", rune(desc[i-len(a)]))) {
					abbrev = true
					break
				}
			}
			if abbrev && i+1 < len(desc) {
				continue
			}
			return desc[:i+1], true
		}
	}
	return desc, false
}

// descriptionProblem is "" when desc follows the style, else what is wrong with it.
func descriptionProblem(desc string) string {
	if desc == "" {
		return ""
	}
	lead, ok := leadSentence(desc)
	switch {
	case strings.Contains(lead, "\n"):
		return "the lead sentence spans a line break"
	case !ok:
		return "no lead sentence ending with '.'"
	case len(lead) > maxLeadSentence:
		return fmt.Sprintf("lead sentence of %d characters (max %d)", len(lead), maxLeadSentence)
	case len(desc) > maxUnbrokenDescription && !strings.HasPrefix(desc[len(lead):], "\n\n"):
		return fmt.Sprintf("%d characters with no paragraph break after the lead sentence", len(desc))
	}
	return ""
}

type describedItem struct{ path, desc string }

func collectBlock(prefix string, b *tfprotov6.SchemaBlock, out *[]describedItem) {
	if b == nil {
		return
	}
	for _, a := range b.Attributes {
		collectAttribute(prefix+"."+a.Name, a, out)
	}
	for _, nb := range b.BlockTypes {
		p := prefix + "." + nb.TypeName
		if nb.Block != nil {
			*out = append(*out, describedItem{p, nb.Block.Description})
		}
		collectBlock(p, nb.Block, out)
	}
}

func collectAttribute(path string, a *tfprotov6.SchemaAttribute, out *[]describedItem) {
	*out = append(*out, describedItem{path, a.Description})
	if a.NestedType != nil {
		for _, na := range a.NestedType.Attributes {
			collectAttribute(path+"."+na.Name, na, out)
		}
	}
}

// servedDescriptions is every attribute, nested attribute, nested block and function parameter
// description of the schemas the provider serves, keyed by a path such as
// "resource gantry_workspace.resource.instance_type".
func servedDescriptions(t *testing.T) []describedItem {
	t.Helper()
	srv := providerserver.NewProtocol6(New("test")())()
	resp, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range resp.Diagnostics {
		t.Fatalf("GetProviderSchema: %s: %s", d.Summary, d.Detail)
	}
	var out []describedItem
	if resp.Provider != nil {
		collectBlock("provider", resp.Provider.Block, &out)
	}
	for kind, schemas := range map[string]map[string]*tfprotov6.Schema{
		"resource": resp.ResourceSchemas, "data": resp.DataSourceSchemas,
		"ephemeral": resp.EphemeralResourceSchemas, "list": resp.ListResourceSchemas,
	} {
		for name, s := range schemas {
			collectBlock(kind+" "+name, s.Block, &out)
		}
	}
	for name, a := range resp.ActionSchemas {
		if a.Schema != nil {
			collectBlock("action "+name, a.Schema.Block, &out)
		}
	}
	ids, err := srv.GetResourceIdentitySchemas(context.Background(), &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for name, is := range ids.IdentitySchemas {
		for _, a := range is.IdentityAttributes {
			out = append(out, describedItem{"identity " + name + "." + a.Name, a.Description})
		}
	}
	for name, f := range resp.Functions {
		params := append([]*tfprotov6.FunctionParameter{}, f.Parameters...)
		if f.VariadicParameter != nil {
			params = append(params, f.VariadicParameter)
		}
		for _, p := range params {
			out = append(out, describedItem{"function " + name + "(" + p.Name + ")", p.Description})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// TestDescriptionsLeadWithOneSentence: every attribute description the provider serves (the
// registry docs and editors' hovers show them) leads with one short sentence of what the
// attribute does, and a long one puts its details after a paragraph break.
func TestDescriptionsLeadWithOneSentence(t *testing.T) {
	items := servedDescriptions(t)
	if len(items) < 100 {
		t.Fatalf("only %d descriptions found; the schema walk is broken", len(items))
	}
	bad := 0
	for _, it := range items {
		if p := descriptionProblem(it.desc); p != "" {
			bad++
			lead, _ := leadSentence(it.desc)
			if len(lead) > 120 {
				lead = lead[:120] + "…"
			}
			t.Errorf("%s: %s: %q", it.path, p, lead)
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d descriptions do not lead with one sentence (≤ %d characters, ending with '.') followed by \"\\n\\n\" when longer than %d characters",
			bad, len(items), maxLeadSentence, maxUnbrokenDescription)
	}
}

func TestDescriptionProblem(t *testing.T) {
	long := strings.Repeat("word ", 70)
	for desc, want := range map[string]bool{
		"": true,
		"Labels of the Workspace; copied to its pods.":                      true,
		"`<namespace>/<name>`.":                                             true,
		"Model name, e.g. `falcon-7b-instruct`; required without `preset`.": true,
		"Uses `a.b` and version 1.14.":                                      true,
		"No full stop":                                                      false,
		"Lead.\n\n" + long + ".":                                            true,
		"Lead. " + long + ".":                                               false,
		strings.Repeat("x", 201) + ".":                                      false,
		"Lead spans\na line.":                                               false,
	} {
		if got := descriptionProblem(desc) == ""; got != want {
			lead, _ := leadSentence(desc)
			t.Errorf("descriptionProblem(%.40q) ok = %v, want %v (lead %.60q)", desc, got, want, lead)
		}
	}
}
