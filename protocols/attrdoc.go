package protocols

import "github.com/zclconf/go-cty/cty"

// AttrDoc documents one attribute of a schema (Info.TargetDocs and
// Info.RequestDocs), apart from its hcldec spec, which has no room for it.
type AttrDoc struct {
	// Description says what the attribute is for, in a sentence; `hload
	// plugin describe` prints it.
	Description string
	// Default is what the protocol receives when the user leaves the
	// attribute out; cty.NilVal (the zero value) for none. It must convert
	// to the attribute's type, and a required attribute has none.
	Default cty.Value
}
