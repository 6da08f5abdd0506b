package main

import (
	"errors"
	"io"
)

// cmdImportAccessLog is `hload import access-log`. (To be built: issue 26.)
func cmdImportAccessLog(args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("hload import access-log is not built yet")}
}
