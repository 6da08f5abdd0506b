package har

import (
	"encoding/json"
	"strconv"
	"strings"
)

// jnode is a JSON value that keeps its objects' keys in the order they
// were written, so that a body written back as HCL reads as recorded.
type jnode struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*jnode // an object's values, or an array's elements
	text string   // a string's value, a number's text, "true" or "false"
	// sent is a request body string's value with the captures and
	// variables that replace what it recorded.
	sent parts
}

// parseJSON reads one JSON value, or reports false.
func parseJSON(text string) (*jnode, bool) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	n, err := readNode(dec)
	if err != nil || dec.More() {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false
	}
	return n, true
}

func readNode(dec *json.Decoder) (*jnode, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		n := &jnode{kind: 'a'}
		if t == '{' {
			n.kind = 'o'
		}
		for dec.More() {
			if n.kind == 'o' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			v, err := readNode(dec)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, err
		}
		return n, nil
	case string:
		return &jnode{kind: 's', text: t}, nil
	case json.Number:
		return &jnode{kind: 'n', text: t.String()}, nil
	case bool:
		if t {
			return &jnode{kind: 'b', text: "true"}, nil
		}
		return &jnode{kind: 'b', text: "false"}, nil
	}
	return &jnode{kind: 'z'}, nil
}

// leaf is a string or number inside a JSON value, with its gjson path.
type leaf struct {
	path   string // "items.1.id"
	key    string // the object key it is under: "id"
	parent string // the object key above that, arrays skipped: "items"
	node   *jnode
}

// leaves lists n's strings and numbers in document order.
func leaves(n *jnode) []leaf {
	var out []leaf
	var walk func(n *jnode, path, key, parent string)
	walk = func(n *jnode, path, key, parent string) {
		switch n.kind {
		case 'o':
			for i, k := range n.keys {
				walk(n.vals[i], joinPath(path, gjsonEscape(k)), k, key)
			}
		case 'a':
			for i, v := range n.vals {
				walk(v, joinPath(path, strconv.Itoa(i)), key, parent)
			}
		case 's', 'n':
			if path != "" {
				out = append(out, leaf{path: path, key: key, parent: parent, node: n})
			}
		}
	}
	walk(n, "", "", "")
	return out
}

func joinPath(path, step string) string {
	if path == "" {
		return step
	}
	return path + "." + step
}

// gjsonEscape escapes the characters gjson's path syntax gives a meaning.
func gjsonEscape(k string) string {
	var b strings.Builder
	for _, r := range k {
		if strings.ContainsRune(`.*?|#@\!=<>%`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
