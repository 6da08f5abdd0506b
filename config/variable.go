package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// envVarPrefix prefixes the environment variables that set variables:
// HLOAD_VAR_base_url sets var.base_url.
const envVarPrefix = "HLOAD_VAR_"

// variableWhere names variable blocks in messages about per-iteration
// values.
const variableWhere = "A variable's default"

// variableSchema is the schema of a variable block.
var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "default"},
		{Name: "type"},
		{Name: "description"},
		{Name: "sensitive"},
	},
}

// variableTypes are the type keywords a variable block may name.
var variableTypes = map[string]cty.Type{
	"string": cty.String,
	"number": cty.Number,
	"bool":   cty.Bool,
}

// decodeVariables is the first phase. A value comes from --var, else from
// HLOAD_VAR_<name>, else from the default.
func (l *loader) decodeVariables(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	l.variables = map[string]cty.Value{}
	l.test.sensitiveVars = map[string]bool{}
	declared := map[string]hcl.Range{}
	for _, b := range blocks {
		name := b.Labels[0]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Invalid variable name",
				"%q cannot be used as var.%s. A variable name starts with a letter and holds only letters, digits, underscores and dashes.", name, name))
			continue
		}
		if earlier, dup := declared[name]; dup {
			diags = append(diags, duplicateDiag("variable", name, b.DefRange, earlier))
			continue
		}
		declared[name] = b.DefRange
		v, d := l.decodeVariable(name, b)
		diags = append(diags, d...)
		l.variables[name] = v
	}

	// A --var that names no variable is most likely a typo.
	var unknown []string
	for name := range l.opts.Vars {
		if _, ok := declared[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	known := make([]string, 0, len(declared))
	for name := range declared {
		known = append(known, name)
	}
	sort.Strings(known)
	for _, name := range unknown {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Undeclared variable in --var %s", name),
			Detail: fmt.Sprintf("No variable block declares %q.%s Declared variables: %s.",
				name, didYouMean(name, known), quoteList(known)),
		})
	}
	return diags
}

// decodeVariable returns the value of one variable, marked when it is
// sensitive. On error it returns an unknown value, so that uses of it do
// not report the same problem again.
func (l *loader) decodeVariable(name string, b *hcl.Block) (cty.Value, hcl.Diagnostics) {
	content, diags := b.Body.Content(variableSchema)
	sensitive, sensitiveSet := false, false
	if attr := content.Attributes["sensitive"]; attr != nil {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type() != cty.Bool || v.IsNull() {
				diags = append(diags, typeDiag(attr, fmt.Errorf("sensitive is true or false")))
			} else {
				sensitive, sensitiveSet = v.True(), true
			}
		}
	}
	v, from, d := l.variableValue(name, b, content, sensitive)
	diags = append(diags, d...)
	// A value from the environment is sensitive unless the variable says
	// sensitive = false: the environment is where tokens are kept.
	if sensitive || from == fromEnvironment && !sensitiveSet {
		l.test.sensitiveVars[name] = true
		l.secrets.addMarked(v.Mark(markSensitive))
		v = v.Mark(markSensitive)
	}
	return v, diags
}

// Where a variable's value comes from.
const (
	fromDefault = iota
	fromFlag
	fromEnvironment
)

// variableValue returns the value of a variable and where it comes from.
// sensitive keeps a refused value out of the message.
func (l *loader) variableValue(name string, b *hcl.Block, content *hcl.BodyContent, sensitive bool) (cty.Value, int, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	ty := cty.DynamicPseudoType
	if attr := content.Attributes["type"]; attr != nil {
		kw := hcl.ExprAsKeyword(attr.Expr)
		t, ok := variableTypes[kw]
		if !ok {
			diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid variable type",
				"The type of a variable is string, number or bool, written without quotes."))
			return cty.DynamicVal, fromDefault, diags
		}
		ty = t
	}
	if attr := content.Attributes["description"]; attr != nil {
		v, d := attr.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() && v.Type() != cty.String {
			diags = append(diags, typeDiag(attr, fmt.Errorf("a string is required")))
		}
	}

	def, hasDefault := cty.NilVal, false
	if attr := content.Attributes["default"]; attr != nil {
		if d := checkStatic(attr.Expr.Variables(), variableWhere); d.HasErrors() {
			return cty.DynamicVal, fromDefault, append(diags, d...)
		}
		v, d := attr.Expr.Value(l.varCtx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return cty.DynamicVal, fromDefault, diags
		}
		if ty != cty.DynamicPseudoType {
			cv, err := convert.Convert(v, ty)
			if err != nil {
				return cty.DynamicVal, fromDefault, append(diags, typeDiag(attr, err))
			}
			v = cv
		} else if v.Type().IsPrimitiveType() {
			ty = v.Type()
		}
		// An untyped list or map default takes any HCL value from --var:
		// its tuple type would refuse a value of another length.
		def, hasDefault = v, true
	}
	if ty == cty.DynamicPseudoType && !hasDefault {
		ty = cty.String // a value from the command line is text
	}

	if s, ok := l.opts.Vars[name]; ok {
		v, err := variableFromString(s, ty)
		if err != nil {
			shown := fmt.Sprintf("=%q", s)
			if sensitive {
				shown = ", a sensitive value,"
				l.secrets.add(s) // and from whatever else quotes it
			}
			return cty.DynamicVal, fromFlag, append(diags, errorDiag(b.DefRange, fmt.Sprintf("Invalid value for --var %s", name),
				"Variable %q is a %s, but --var %s%s is not: %s.", name, typeName(ty), name, shown, err))
		}
		return v, fromFlag, diags
	}
	if l.opts.LookupEnv != nil {
		if s, ok := l.opts.LookupEnv(envVarPrefix + name); ok {
			v, err := variableFromString(s, ty)
			if err != nil {
				// Sensitive unless the variable says otherwise.
				l.secrets.add(s)
				return cty.DynamicVal, fromEnvironment, append(diags, errorDiag(b.DefRange, fmt.Sprintf("Invalid value in %s%s", envVarPrefix, name),
					"Variable %q is a %s, but the value of the environment variable %s%s is not: %s.", name, typeName(ty), envVarPrefix, name, err))
			}
			return v, fromEnvironment, diags
		}
	}
	if !hasDefault {
		return cty.DynamicVal, fromDefault, append(diags, errorDiag(b.DefRange, fmt.Sprintf("No value for variable %q", name),
			"Variable %q has no default. Set it with --var %s=VALUE or the environment variable %s%s, or add a default.",
			name, name, envVarPrefix, name))
	}
	return def, fromDefault, diags
}

// variableFromString converts a --var or environment value to ty. A value
// for a list or map is read as an HCL expression, such as ["a", "b"].
func variableFromString(s string, ty cty.Type) (cty.Value, error) {
	if ty.IsPrimitiveType() {
		return convert.Convert(cty.StringVal(s), ty)
	}
	expr, diags := hclsyntax.ParseExpression([]byte(s), "--var", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("it is not an HCL value such as [\"a\", \"b\"]")
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, fmt.Errorf("%s", diags[0].Detail)
	}
	return convert.Convert(v, ty)
}

// typeName names a variable type for a message.
func typeName(ty cty.Type) string {
	if ty == cty.DynamicPseudoType {
		return "list or map"
	}
	return ty.FriendlyName()
}
