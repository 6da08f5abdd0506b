package config

// InterpretOnly drops the compiled forms of test's requests, for the tests
// of package config_test that compare both paths through the core.
var InterpretOnly = interpretOnly

// CompiledAttributes names r's attributes that run compiled.
func CompiledAttributes(r *Request) []string {
	var keys []string
	for _, a := range r.dynamic {
		if a.node != nil {
			keys = append(keys, a.key)
		}
	}
	return keys
}
