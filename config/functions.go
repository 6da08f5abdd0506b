package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// impureFunctions return a different value on every call. An expression that
// calls one is evaluated per iteration, not once at load.
var impureFunctions = map[string]bool{
	"random_int":    true,
	"random_choice": true,
	"random_string": true,
	"uuid":          true,
	"unix_micros":   true,
}

// maxRandomString bounds random_string so that a typo cannot exhaust memory.
const maxRandomString = 1 << 20

// uniformType is what uniform() returns. It is a capsule so that no other
// attribute can accept it by accident: only think_time knows how to read it.
var uniformType = cty.Capsule("uniform", reflect.TypeFor[ThinkTime]())

// functions returns the explicit allow-list of functions a config may call.
// dir is the folder file() is confined to; env() records its values in
// sec, which may be nil.
func functions(dir string, opts Options, sec *secrets) map[string]function.Function {
	return map[string]function.Function{
		// go-cty stdlib
		"abs":        stdlib.AbsoluteFunc,
		"ceil":       stdlib.CeilFunc,
		"floor":      stdlib.FloorFunc,
		"max":        stdlib.MaxFunc,
		"min":        stdlib.MinFunc,
		"chomp":      stdlib.ChompFunc,
		"coalesce":   stdlib.CoalesceFunc,
		"concat":     stdlib.ConcatFunc,
		"contains":   stdlib.ContainsFunc,
		"distinct":   stdlib.DistinctFunc,
		"element":    stdlib.ElementFunc,
		"flatten":    stdlib.FlattenFunc,
		"format":     stdlib.FormatFunc,
		"formatdate": stdlib.FormatDateFunc,
		"indent":     stdlib.IndentFunc,
		"join":       stdlib.JoinFunc,
		"jsondecode": stdlib.JSONDecodeFunc,
		"jsonencode": stdlib.JSONEncodeFunc,
		"keys":       stdlib.KeysFunc,
		"length":     stdlib.LengthFunc,
		"lookup":     stdlib.LookupFunc,
		"lower":      stdlib.LowerFunc,
		"merge":      stdlib.MergeFunc,
		"range":      stdlib.RangeFunc,
		"regex":      stdlib.RegexFunc,
		"regexall":   stdlib.RegexAllFunc,
		"replace":    stdlib.ReplaceFunc,
		"reverse":    stdlib.ReverseListFunc,
		"slice":      stdlib.SliceFunc,
		"sort":       stdlib.SortFunc,
		"split":      stdlib.SplitFunc,
		"strrev":     stdlib.ReverseFunc,
		"substr":     stdlib.SubstrFunc,
		"title":      stdlib.TitleFunc,
		"trim":       stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc,
		"trimsuffix": stdlib.TrimSuffixFunc,
		"trimspace":  stdlib.TrimSpaceFunc,
		"upper":      stdlib.UpperFunc,
		"values":     stdlib.ValuesFunc,
		"zipmap":     stdlib.ZipmapFunc,
		"tostring":   stdlib.MakeToFunc(cty.String),
		"tonumber":   stdlib.MakeToFunc(cty.Number),
		"tobool":     stdlib.MakeToFunc(cty.Bool),
		"tolist":     stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"tomap":      stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
		"toset":      stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)),

		// hload
		"random_int":    randomIntFunc(runDraws{}),
		"random_choice": randomChoiceFunc(runDraws{}),
		"random_string": randomStringFunc(runDraws{}),
		"uuid":          uuidFunc(runDraws{}),
		"unix_micros":   unixMicrosFunc,
		"env":           envFunc(opts.LookupEnv, sec),
		"file":          fileFunc(dir),
		"duration":      durationFunc,
		"uniform":       uniformFunc,
		"demo_url":      demoURLFunc(opts.DemoURL),
	}
}

// draws is where the random functions take their values from.
type draws interface {
	Uint64() uint64
	Uint64N(n uint64) uint64
	IntN(n int) int
}

// runDraws are math/rand/v2's global generator: random at every run, and
// safe for the VUs' concurrent calls.
type runDraws struct{}

func (runDraws) Uint64() uint64          { return rand.Uint64() }
func (runDraws) Uint64N(n uint64) uint64 { return rand.Uint64N(n) }
func (runDraws) IntN(n int) int          { return rand.IntN(n) }

// loadSeed seeds the draws of a per-iteration expression's sample
// evaluation at load. Any fixed value works: what matters is that loading
// the same files draws the same values, so that validate, plan and apply
// give one verdict on an expression that fails only for some draws.
const loadSeed = 12

// loadFunctions returns the random functions for a sample evaluation at
// load: each call gets its own generator with the fixed seed, so that the
// draws of one request do not depend on the others. Load is single
// threaded; the generator is not safe for concurrent use.
func loadFunctions() map[string]function.Function {
	return randomFunctions(loadDraws())
}

// loadDraws returns a generator seeded with loadSeed.
func loadDraws() draws { return rand.New(rand.NewPCG(loadSeed, loadSeed)) }

// randomFunctions returns the random functions, drawing from d.
func randomFunctions(d draws) map[string]function.Function {
	return map[string]function.Function{
		"random_int":    randomIntFunc(d),
		"random_choice": randomChoiceFunc(d),
		"random_string": randomStringFunc(d),
		"uuid":          uuidFunc(d),
	}
}

// randomIntFunc returns random_int(min, max): a whole number in [min, max],
// both included.
func randomIntFunc(d draws) function.Function {
	return function.New(&function.Spec{
		Description: "Returns a random whole number between min and max, both included.",
		Params: []function.Parameter{
			{Name: "min", Type: cty.Number},
			{Name: "max", Type: cty.Number},
		},
		Type: function.StaticReturnType(cty.Number),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			lo, ok := wholeNumber(args[0])
			if !ok {
				return cty.NilVal, function.NewArgErrorf(0, "min must be a whole number")
			}
			hi, ok := wholeNumber(args[1])
			if !ok {
				return cty.NilVal, function.NewArgErrorf(1, "max must be a whole number")
			}
			if lo > hi {
				return cty.NilVal, function.NewArgErrorf(1, "max (%d) is less than min (%d)", hi, lo)
			}
			return cty.NumberIntVal(drawInt(d, lo, hi)), nil
		},
	})
}

// drawInt is random_int's draw, lo <= hi, shared with its compiled form
// (see compile.go) so that both give the same values from the same draws.
func drawInt(d draws, lo, hi int64) int64 {
	// The span is computed in uint64 so that the full int64 range works.
	span := uint64(hi) - uint64(lo)
	var r uint64
	if span == math.MaxUint64 {
		r = d.Uint64()
	} else {
		r = d.Uint64N(span + 1)
	}
	return lo + int64(r)
}

// randomChoiceFunc returns random_choice(list): one element of a non-empty
// list, chosen at random.
func randomChoiceFunc(d draws) function.Function {
	return function.New(&function.Spec{
		Description: "Returns one element of a list, chosen at random.",
		Params:      []function.Parameter{{Name: "list", Type: cty.DynamicPseudoType}},
		Type: func(args []cty.Value) (cty.Type, error) {
			ty := args[0].Type()
			switch {
			case ty.IsListType(), ty.IsSetType():
				return ty.ElementType(), nil
			case ty.IsTupleType(), ty == cty.DynamicPseudoType:
				return cty.DynamicPseudoType, nil
			}
			return cty.NilType, function.NewArgErrorf(0, "a list is required")
		},
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			list := args[0]
			if list.IsNull() {
				return cty.NilVal, function.NewArgErrorf(0, "a list is required, not null")
			}
			n := list.LengthInt()
			if n == 0 {
				return cty.NilVal, function.NewArgErrorf(0, "the list is empty")
			}
			pick := d.IntN(n)
			i := 0
			for it := list.ElementIterator(); it.Next(); i++ {
				if i == pick {
					_, v := it.Element()
					return v, nil
				}
			}
			return cty.NilVal, errors.New("random_choice: list changed length") // unreachable
		},
	})
}

// alphanumeric is the alphabet of random_string.
const alphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomStringFunc returns random_string(n): n random letters and digits.
func randomStringFunc(d draws) function.Function {
	return function.New(&function.Spec{
		Description: "Returns a string of n random letters and digits.",
		Params:      []function.Parameter{{Name: "n", Type: cty.Number}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			n, ok := wholeNumber(args[0])
			if !ok || n < 0 || n > maxRandomString {
				return cty.NilVal, function.NewArgErrorf(0, "n must be a whole number between 0 and %d", maxRandomString)
			}
			var b strings.Builder
			drawString(&b, d, int(n))
			return cty.StringVal(b.String()), nil
		},
	})
}

// drawString writes random_string(n)'s draw to b; its compiled form
// shares it, and writes straight into the template it is part of.
func drawString(b *strings.Builder, d draws, n int) {
	b.Grow(n)
	for range n {
		b.WriteByte(alphanumeric[d.IntN(len(alphanumeric))])
	}
}

// uuidFunc returns uuid(): a random (version 4) UUID.
func uuidFunc(d draws) function.Function {
	return function.New(&function.Spec{
		Description: "Returns a random UUID (version 4).",
		Type:        function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			id, err := drawUUID(d)
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(id), nil
		},
	})
}

// drawUUID is uuid()'s draw, shared with its compiled form.
func drawUUID(d draws) (string, error) {
	var id uuid.UUID
	var err error
	if _, run := d.(runDraws); run {
		id, err = uuid.NewRandom() // crypto/rand, as before
	} else {
		id, err = uuid.NewRandomFromReader(drawReader{d})
	}
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// drawReader reads bytes from draws, for uuid's reader.
type drawReader struct{ d draws }

func (r drawReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.d.IntN(256))
	}
	return len(p), nil
}

// unixMicrosFunc returns the wall-clock time of the call in whole
// microseconds since the Unix epoch: a send timestamp for a payload, from
// which a subscriber on the same host clock computes delivery latency.
var unixMicrosFunc = function.New(&function.Spec{
	Description: "Returns the current time in whole microseconds since the Unix epoch.",
	Type:        function.StaticReturnType(cty.Number),
	Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
		return cty.NumberIntVal(time.Now().UnixMicro()), nil
	},
})

// envFunc returns env(name): the value of an environment variable, or ""
// when it is unset.
func envFunc(lookup func(string) (string, bool), sec *secrets) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the value of an environment variable, or an empty string when it is not set. The value is sensitive.",
		Params:      []function.Parameter{{Name: "name", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if lookup == nil {
				return cty.StringVal("").Mark(markSensitive), nil
			}
			v, _ := lookup(args[0].AsString())
			if !utf8.ValidString(v) {
				return cty.NilVal, function.NewArgErrorf(0, "the environment variable is not valid UTF-8")
			}
			if sec != nil {
				// The raw value too: a function's error may quote it
				// where nothing derived from it is left to record.
				sec.add(v)
			}
			// Environment variables are where tokens are kept, so every
			// value env() returns is sensitive (docs/reference.md).
			return cty.StringVal(v).Mark(markSensitive), nil
		},
	})
}

// fileFunc returns file(path): the content of a file in the config folder.
// Paths are relative to dir and may not leave it, neither with ".." nor
// through a symbolic link, so a shared config cannot read arbitrary files.
func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the content of a file in the config folder.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			src, err := readConfined(dir, args[0].AsString())
			if err != nil {
				return cty.NilVal, function.NewArgError(0, err)
			}
			return cty.StringVal(src), nil
		},
	})
}

// readConfined reads path relative to dir, refusing any path that leaves dir.
func readConfined(dir, path string) (string, error) {
	f, err := openConfined(dir, path, "file()")
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return "", fmt.Errorf("cannot read %q: %w", path, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("file %q is not valid UTF-8 text", path)
	}
	return string(b), nil
}

// openConfined opens path relative to dir for reading, refusing any path
// that leaves dir, so that a shared config cannot read arbitrary files.
// reader names what reads the file, such as "file()", for the messages.
func openConfined(dir, path, reader string) (*os.File, error) {
	if dir == "" {
		dir = "."
	}
	// The lexical check gives a clear message for the common mistakes.
	if filepath.IsAbs(path) || strings.HasPrefix(path, "/") {
		return nil, fmt.Errorf("absolute path %q is not allowed; use a path relative to the config folder %s", path, dir)
	}
	if !filepath.IsLocal(path) {
		return nil, fmt.Errorf("path %q leaves the config folder %s; %s can only read files inside it", path, dir, reader)
	}
	// os.Root resolves symbolic links itself and refuses any that lead out
	// of dir, without a window between checking and opening. A file opened
	// through it stays open after the root is closed.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("cannot open the config folder: %w", err)
	}
	defer root.Close()
	f, err := root.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("no file %q in the config folder %s", path, dir)
	case err != nil && escapesThroughLink(dir, path):
		return nil, fmt.Errorf("path %q is a symbolic link that leads out of the config folder %s; %s can only read files inside it", path, dir, reader)
	case err != nil:
		return nil, fmt.Errorf("cannot read %q: %w", path, err)
	}
	return f, nil
}

// escapesThroughLink reports whether path, once its symbolic links are
// resolved, lies outside dir. It only picks the error message; os.Root
// already refused the read.
func escapesThroughLink(dir, path string) bool {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	realPath, err := filepath.EvalSymlinks(filepath.Join(dir, path))
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(realDir, realPath)
	return err != nil || !filepath.IsLocal(rel)
}

// durationFunc returns duration(s): a duration as a number of seconds.
var durationFunc = function.New(&function.Spec{
	Description: `Returns a duration such as "1m30s" as a number of seconds.`,
	Params:      []function.Parameter{{Name: "duration", Type: cty.DynamicPseudoType}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		if args[0].IsNull() {
			return cty.NilVal, function.NewArgErrorf(0, "a duration is required, not null")
		}
		d, err := durationFromValue(args[0])
		if err != nil {
			return cty.NilVal, function.NewArgError(0, err)
		}
		return cty.NumberFloatVal(d.Seconds()), nil
	},
})

// uniformFunc returns uniform(min, max), a think time drawn uniformly from
// [min, max]. Only think_time accepts its result.
var uniformFunc = function.New(&function.Spec{
	Description: "Returns a think time drawn uniformly between min and max. Only think_time accepts it.",
	Params: []function.Parameter{
		{Name: "min", Type: cty.DynamicPseudoType},
		{Name: "max", Type: cty.DynamicPseudoType},
	},
	Type: function.StaticReturnType(uniformType),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		var bounds [2]time.Duration
		for i, a := range args {
			if a.IsNull() {
				return cty.NilVal, function.NewArgErrorf(i, "a duration is required, not null")
			}
			d, err := durationFromValue(a)
			if err != nil {
				return cty.NilVal, function.NewArgError(i, err)
			}
			if d < 0 {
				return cty.NilVal, function.NewArgErrorf(i, "the duration must not be negative")
			}
			bounds[i] = d
		}
		if bounds[0] > bounds[1] {
			return cty.NilVal, function.NewArgErrorf(1, "max (%s) is less than min (%s)", bounds[1], bounds[0])
		}
		return cty.CapsuleVal(uniformType, &ThinkTime{Min: bounds[0], Max: bounds[1]}), nil
	},
})

// demoURLFunc returns demo_url(): the address of hload's embedded demo
// target. It calls get at most once, because get may start a server.
func demoURLFunc(get func() (string, error)) function.Function {
	var (
		once sync.Once
		url  string
		err  error
	)
	return function.New(&function.Spec{
		Description: "Returns the address of hload's embedded demo target.",
		Type:        function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) {
			if get == nil {
				return cty.NilVal, errors.New("demo_url() is only available in hload apply, validate and plan")
			}
			once.Do(func() { url, err = get() })
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot start the demo target: %w", err)
			}
			return cty.StringVal(url), nil
		},
	})
}
