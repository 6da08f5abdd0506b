package config

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// durationHint is appended to every duration error, because the two forms
// are not obvious to a user coming from another tool.
const durationHint = `write a duration such as "30s", "1m30s" or "500ms", or a number of seconds`

// durationForm is the syntax of a Go duration string, whatever its size.
var durationForm = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// maxDuration is the longest duration, in whole hours, for messages.
const maxDuration = "2562047h"

// durationFromValue reads a duration: a Go duration string ("1m30s") or a
// number of seconds. v must be known and not null.
func durationFromValue(v cty.Value) (time.Duration, error) {
	switch v.Type() {
	case cty.String:
		s := v.AsString()
		d, err := time.ParseDuration(s)
		if err != nil {
			if _, numErr := strconv.ParseFloat(s, 64); numErr == nil {
				return 0, fmt.Errorf("%q has no unit; %s", s, durationHint)
			}
			if durationForm.MatchString(s) {
				// Well formed, so time.ParseDuration refused it for
				// its size.
				return 0, fmt.Errorf("%q is longer than the longest duration hload can count, %s (about 292 years)", s, maxDuration)
			}
			return 0, fmt.Errorf("%q is not a duration; %s", s, durationHint)
		}
		return d, nil
	case cty.Number:
		secs, _ := v.AsBigFloat().Float64()
		if math.IsInf(secs, 0) || math.Abs(secs) > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%s seconds is longer than the longest duration hload can count, %s (about 292 years)", numberString(v), maxDuration)
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	case uniformType:
		return 0, errors.New("uniform() can only be used for think_time")
	}
	return 0, fmt.Errorf("a duration is required, not a %s; %s", v.Type().FriendlyName(), durationHint)
}

// wholeNumber returns v as an int64 when v is a known whole number that fits.
func wholeNumber(v cty.Value) (int64, bool) {
	if v.Type() != cty.Number || v.IsNull() || !v.IsKnown() {
		return 0, false
	}
	bf := v.AsBigFloat()
	if bf.IsInf() || !bf.IsInt() {
		return 0, false
	}
	i, acc := bf.Int64()
	return i, acc == big.Exact
}

// numberString formats a number for a message.
func numberString(v cty.Value) string {
	if v.Type() != cty.Number || v.IsNull() || !v.IsKnown() {
		return "?"
	}
	return v.AsBigFloat().Text('g', 10)
}
