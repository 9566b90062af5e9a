// Package hostile holds the hostile-guest suite: the real server binary, serving
// plugins built from source in the repository (WAT, C and Go) that each attack the host
// in one way, with a benign plugin beside them. Every attack must end in a bounded,
// clear way while the server keeps serving others. The package has no code of its own;
// run `go test -v ./hostile` for the measured time to stop of each shape.
package hostile
