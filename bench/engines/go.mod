module github.com/hload/hload/bench/engines

go 1.26.0

require github.com/valyala/fasthttp v1.78.0

replace github.com/hload/hload => ../..

require (
	github.com/hload/hload v0.0.0
	github.com/zclconf/go-cty v1.20.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/agext/levenshtein v1.2.1 // indirect
	github.com/apparentlymart/go-textseg/v15 v15.0.0 // indirect
	github.com/apparentlymart/go-textseg/v17 v17.0.1 // indirect
	github.com/hashicorp/hcl/v2 v2.25.0 // indirect
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/mitchellh/go-wordwrap v1.0.1 // indirect
	github.com/molecule-man/go-brrr v1.3.1 // indirect
	github.com/valyala/bytebufferpool v1.0.0 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
)
