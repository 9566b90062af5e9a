// Package canonjson writes a JSON document in a canonical form that loses nothing:
// object keys sorted, no insignificant space, numbers exactly as written, strings
// re-encoded from their exact value. Two documents have the same canonical form only
// if every decoder sees the same values in them, so a digest of the form can stand
// for the document.
//
// A document that decoders may read differently is refused: an object with a key
// twice (decoders keep the first, the last, or fail), and a string with an escaped
// lone surrogate (\ud800), which decoders replace or keep as they choose.
package canonjson
