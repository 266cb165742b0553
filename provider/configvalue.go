package provider

import (
	"math/big"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// configValue is a read-only view of a configuration (tfsdk.Config.Raw, or a plan) for
// cross-field checks. Unlike decoding into a model, which fails on any unknown collection, every
// accessor reports whether the value is known, so a check validates what is known; Terraform
// validates again at apply with everything known. Children of unknown are unknown, of null are
// null; each value carries its path for AddAttributeError.
type configValue struct {
	v tftypes.Value
	p path.Path
}

// unknownValue is the child of an unknown collection or object.
var unknownValue = tftypes.NewValue(tftypes.DynamicPseudoType, tftypes.UnknownValue)

// configRoot is the view of a whole configuration, e.g. configRoot(req.Config.Raw).
func configRoot(raw tftypes.Value) configValue { return configValue{v: raw, p: path.Empty()} }

// Path is the value's attribute path, e.g. packages[0].config["a"].
func (c configValue) Path() path.Path { return c.p }

// Unknown reports whether the value itself is unknown (its children may be unknown even
// when it is known).
func (c configValue) Unknown() bool { return !c.v.IsKnown() }

// Null reports whether the value is null (unset). A value that is unknown is not null.
func (c configValue) Null() bool { return c.v.IsKnown() && c.v.IsNull() }

// Set reports whether the value is present and wholly known (no unknown part anywhere in it).
func (c configValue) Set() bool { return c.v.IsFullyKnown() && !c.v.IsNull() }

// usable reports whether the value is known and not null.
func (c configValue) usable() bool { return c.v.IsKnown() && !c.v.IsNull() }

// Attr is the attribute name of an object (or a single nested attribute).
func (c configValue) Attr(name string) configValue {
	child := configValue{p: c.p.AtName(name)}
	switch {
	case !c.v.IsKnown():
		child.v = unknownValue
	case !c.v.IsNull():
		var attrs map[string]tftypes.Value
		if err := c.v.As(&attrs); err == nil {
			child.v = attrs[name]
		}
	}
	return child
}

// at is the value at p below c (attribute names, list indexes and map keys; another step
// gives a null value): unknown below an unknown value, null below a null or missing one.
func (c configValue) at(p path.Path) configValue {
	for _, st := range p.Steps() {
		switch st := st.(type) {
		case path.PathStepAttributeName:
			c = c.Attr(string(st))
		case path.PathStepElementKeyInt:
			c = c.elem(func() (configValue, bool) {
				l, _ := c.List()
				if int(st) < 0 || int(st) >= len(l) {
					return configValue{}, false
				}
				return l[st], true
			}, c.p.AtListIndex(int(st)))
		case path.PathStepElementKeyString:
			c = c.elem(func() (configValue, bool) {
				m, _ := c.Map()
				e, ok := m[string(st)]
				return e, ok
			}, c.p.AtMapKey(string(st)))
		default:
			return configValue{v: tftypes.NewValue(tftypes.DynamicPseudoType, nil), p: p}
		}
	}
	return c
}

// elem is the element get returns of collection c, at path p: unknown when c is unknown,
// null when c is null or has no such element.
func (c configValue) elem(get func() (configValue, bool), p path.Path) configValue {
	if !c.v.IsKnown() {
		return configValue{v: unknownValue, p: p}
	}
	if e, ok := get(); ok {
		return e
	}
	return configValue{v: tftypes.NewValue(tftypes.DynamicPseudoType, nil), p: p}
}

// List is the elements of a list, and whether the list is known; nil (and true) when null.
// An element may still be unknown.
func (c configValue) List() ([]configValue, bool) {
	if !c.v.IsKnown() {
		return nil, false
	}
	if c.v.IsNull() {
		return nil, true
	}
	var elems []tftypes.Value
	if err := c.v.As(&elems); err != nil {
		return nil, false
	}
	out := make([]configValue, len(elems))
	for i, e := range elems {
		out[i] = configValue{v: e, p: c.p.AtListIndex(i)}
	}
	return out, true
}

// Map is the entries of a map (or map nested attribute), and whether the map is known: the
// keys of a known map are known, its values may not be. nil (and true) when null.
func (c configValue) Map() (map[string]configValue, bool) {
	if !c.v.IsKnown() {
		return nil, false
	}
	if c.v.IsNull() {
		return nil, true
	}
	var entries map[string]tftypes.Value
	if err := c.v.As(&entries); err != nil {
		return nil, false
	}
	out := make(map[string]configValue, len(entries))
	for k, e := range entries {
		out[k] = configValue{v: e, p: c.p.AtMapKey(k)}
	}
	return out, true
}

// StringMap is the known entries of a map of strings, and whether the map is wholly known
// (the map and every value). Null entries are left out.
func (c configValue) StringMap() (map[string]string, bool) {
	m, ok := c.Map()
	if !ok {
		return nil, false
	}
	out := make(map[string]string, len(m))
	complete := true
	for k, e := range m {
		if s, known := e.String(); known {
			out[k] = s
		} else if e.Unknown() {
			complete = false
		}
	}
	return out, complete
}

// String is the value of a string, and whether it is known and not null.
func (c configValue) String() (string, bool) {
	if !c.usable() {
		return "", false
	}
	var s string
	if err := c.v.As(&s); err != nil {
		return "", false
	}
	return s, true
}

// Int64 is the value of a number that is a whole int64, and whether it is known, not null
// and whole.
func (c configValue) Int64() (int64, bool) {
	if !c.usable() {
		return 0, false
	}
	var f big.Float
	if err := c.v.As(&f); err != nil {
		return 0, false
	}
	i, acc := f.Int64()
	return i, acc == big.Exact
}

// Bool is the value of a bool, and whether it is known and not null.
func (c configValue) Bool() (bool, bool) {
	if !c.usable() {
		return false, false
	}
	var b bool
	if err := c.v.As(&b); err != nil {
		return false, false
	}
	return b, true
}
