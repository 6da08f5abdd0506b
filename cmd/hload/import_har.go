package main

import (
	"errors"
	"io"
)

// cmdImportHAR is `hload import har`. (To be built: issue 26.)
func cmdImportHAR(args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("hload import har is not built yet")}
}
