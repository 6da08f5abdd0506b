// Package layout holds the repository's tests of its own shape: the
// floors its packages sit on and the imports between them, each metric
// name defined once, and the length of the functions on the request path
// (HCL -> config -> core -> protocol -> metrics -> sink). It has no code
// of its own; CONTRIBUTING.md explains the rules these tests keep.
package layout
