package boltstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"runtime/debug"
)

// bbolt's file format (go.etcd.io/bbolt/internal/common), read here before bbolt maps
// the file: bbolt maps more than the file holds, and a page it reads past the end of a
// truncated file is a SIGBUS that kills the process, not an error. bbolt writes its
// integers in the machine's byte order.
const (
	boltMagic       = 0xED0CDAED
	boltVersion     = 2
	pageHeaderSize  = 16                  // id u64, flags u16, count u16, overflow u32
	metaSize        = 64                  // the meta fields after the page header, checksum included
	noFreelist      = ^uint64(0)          // meta.freelist when the freelist is not synced
	minPageSize     = 1024                // bbolt probes page sizes from 1 KiB ...
	maxPageSize     = 1024 << 14          // ... to 16 MiB
	flagBranch      = 0x01                // page flags
	flagLeaf        = 0x02                //
	flagFreelist    = 0x10                //
	defaultPageSize = 4096                // bbolt's page size when no meta page tells it
	probeSize       = 0x1000              // how much of a meta page bbolt reads to find the page size
	checksumOffset  = pageHeaderSize + 56 // the meta checksum covers the 56 bytes before it
)

// meta is a bbolt meta page's fields.
type meta struct {
	magic, version, pageSize uint32
	root, freelist, pgid     uint64 // pgid: the high-water mark, the file's page count in use
	txid                     uint64
}

// parseMeta decodes the meta page at the start of b (at least pageHeaderSize+metaSize
// bytes) and checks its magic, version and checksum.
func parseMeta(b []byte) (meta, error) {
	if len(b) < pageHeaderSize+metaSize {
		return meta{}, errors.New("meta page is cut short")
	}
	le := binary.NativeEndian
	m := b[pageHeaderSize:]
	v := meta{magic: le.Uint32(m[0:]), version: le.Uint32(m[4:]), pageSize: le.Uint32(m[8:]),
		root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]), pgid: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}
	switch {
	case v.magic != boltMagic:
		return v, errors.New("not a bbolt file (bad magic)")
	case v.version != boltVersion:
		return v, fmt.Errorf("bbolt format version %d, want %d", v.version, boltVersion)
	}
	h := fnv.New64a()
	h.Write(b[pageHeaderSize:checksumOffset])
	if h.Sum64() != le.Uint64(b[checksumOffset:]) {
		return v, errors.New("meta page checksum mismatch")
	}
	return v, nil
}

// checkFile checks, without mapping it, that the bbolt file r of size bytes can be
// opened without bbolt reading past its end: a valid meta page, every valid meta page
// within the file (its high-water mark, root and freelist), and the freelist and root
// pages of the one bbolt will use where they should be. An empty file is a new store.
// It does not check the tree below the root: Open walks it under fault protection.
func checkFile(r io.ReaderAt, size int64) error {
	if size == 0 {
		return nil
	}
	pageSize, err := findPageSize(r, size)
	if err != nil {
		return err
	}
	if size < 2*pageSize {
		return fmt.Errorf("file of %d bytes is shorter than its two meta pages (%d bytes)", size, 2*pageSize)
	}
	pages := uint64(size / pageSize)
	var metas [2]meta
	var errs [2]error
	for i := range metas {
		b := make([]byte, pageHeaderSize+metaSize)
		if _, err := r.ReadAt(b, int64(i)*pageSize); err != nil {
			return fmt.Errorf("read meta page %d: %w", i, err)
		}
		metas[i], errs[i] = parseMeta(b)
		if errs[i] != nil {
			continue
		}
		m := metas[i]
		switch {
		case int64(m.pageSize) != pageSize:
			errs[i] = fmt.Errorf("page size %d, want %d", m.pageSize, pageSize)
		case m.pgid < 2 || m.pgid > pages:
			errs[i] = fmt.Errorf("high-water mark of %d pages, the file holds %d (truncated?)", m.pgid, pages)
		case m.root < 2 || m.root >= m.pgid:
			errs[i] = fmt.Errorf("root page %d outside [2, %d)", m.root, m.pgid)
		case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
			errs[i] = fmt.Errorf("freelist page %d outside [2, %d)", m.freelist, m.pgid)
		}
	}
	// bbolt uses the valid meta page with the higher transaction id.
	use := -1
	for i := range metas {
		if errs[i] == nil && (use < 0 || metas[i].txid > metas[use].txid) {
			use = i
		}
	}
	if use < 0 {
		return fmt.Errorf("no usable meta page (page 0: %v; page 1: %v)", errs[0], errs[1])
	}
	m := metas[use]
	if err := checkPage(r, pageSize, m.root, m.pgid, flagBranch|flagLeaf); err != nil {
		return fmt.Errorf("root: %w", err)
	}
	if m.freelist != noFreelist {
		if err := checkPage(r, pageSize, m.freelist, m.pgid, flagFreelist); err != nil {
			return fmt.Errorf("freelist: %w", err)
		}
	}
	return nil
}

// findPageSize finds the page size as bbolt does: from the first valid meta page, at
// offset 0 or at a power of two from 1 KiB to 16 MiB.
func findPageSize(r io.ReaderAt, size int64) (int64, error) {
	b := make([]byte, pageHeaderSize+metaSize)
	for pos := int64(0); pos <= maxPageSize; {
		if pos+int64(len(b)) > size {
			break
		}
		if _, err := r.ReadAt(b, pos); err != nil {
			return 0, fmt.Errorf("read meta page at %d: %w", pos, err)
		}
		if m, err := parseMeta(b); err == nil {
			ps := int64(m.pageSize)
			if ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
				return 0, fmt.Errorf("meta page at %d: page size %d is not a power of two in [%d, %d]", pos, ps, minPageSize, maxPageSize)
			}
			return ps, nil
		}
		if pos == 0 {
			pos = minPageSize
		} else {
			pos *= 2
		}
	}
	if size < probeSize {
		return 0, fmt.Errorf("file of %d bytes holds no valid meta page", size)
	}
	return defaultPageSize, nil
}

// checkPage checks that the page at id, with its overflow pages, ends below the
// high-water mark and has one of the flags in want.
func checkPage(r io.ReaderAt, pageSize int64, id, pgid uint64, want uint16) error {
	b := make([]byte, pageHeaderSize)
	if _, err := r.ReadAt(b, int64(id)*pageSize); err != nil {
		return fmt.Errorf("read page %d: %w", id, err)
	}
	le := binary.NativeEndian
	flags, overflow := le.Uint16(b[8:]), uint64(le.Uint32(b[12:]))
	switch {
	case flags&want == 0:
		return fmt.Errorf("page %d has type %#x, want %#x", id, flags, want)
	case id+overflow >= pgid:
		return fmt.Errorf("page %d with %d overflow pages ends past the high-water mark %d", id, overflow, pgid)
	}
	return nil
}

// errPanicked marks an error guard made of a panic or a fault.
var errPanicked = errors.New("bbolt failed reading it")

// guard runs f with memory faults turned into panics, and any panic into an error: a
// corrupt page can make bbolt read outside the file or index out of range.
func guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanicked, r)
		}
	}()
	return f()
}
