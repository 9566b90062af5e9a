/*
 * mcpwh.h - single-header C SDK for mcp-wasmhost plugins (guest ABI v1).
 *
 * The contract this header implements is docs/ABI.md; when the two disagree,
 * ABI.md wins. Everything here is a convenience on top of that text: a plugin
 * may call the raw imports directly and ignore the rest.
 *
 * Build a plugin as a WASI reactor (never a command: a module exporting
 * `_start` is refused). From the root of a checkout, on Debian (packages
 * clang-14, lld-14, wasi-libc, libclang-rt-14-dev-wasm32):
 *
 *   clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -mexec-model=reactor \
 *         -Wl,--strip-all -Wl,-z,stack-size=32768 -Isdk-guest/c -o myplugin.wasm myplugin.c
 *
 * (A 32 KiB stack, clang's default being 64 KiB, fits a small plugin in one
 * 64 KiB page of memory: a fresh instance per call then costs half as much.)
 * `mcp-wasmhost new c NAME` writes a plugin folder with this build, a test and
 * the config entry; `mcp-wasmhost call myplugin.wasm TOOL '{...}'` runs a tool.
 *
 * Everything is `static` (header-only, no separate .c file); unused helpers cost
 * nothing, and host functions that are never called are not imported. The
 * only dependency is the C standard library (wasi-libc).
 *
 * Minimal plugin:
 *
 *   #include "mcpwh.h"
 *
 *   static int32_t describe(void) {
 *       return mcpwh_write_manifest(
 *           "{\"tools\":[{\"name\":\"hello\",\"description\":\"Greets.\","
 *           "\"inputSchema\":{\"type\":\"object\",\"properties\":{}}}]}");
 *   }
 *
 *   static int32_t call(void) {
 *       mcpwh_call_input in;
 *       if (mcpwh_read_call(&in) != MCPWH_OK)
 *           return mcpwh_fail("cannot read the call input");
 *       int32_t rc = mcpwh_call_is(&in, "hello")
 *           ? mcpwh_result_text("hello, world", 12, NULL, 0, 0)
 *           : mcpwh_result_errorf("unknown tool \"%.*s\"", (int)in.tool_len, in.tool);
 *       mcpwh_call_input_free(&in);
 *       return rc == MCPWH_OK ? 0 : 1;
 *   }
 *
 *   MCPWH_PLUGIN(describe, call)
 *
 * Conventions used throughout:
 *   - Functions that talk to the host return an int32_t status: MCPWH_OK (0)
 *     or a negative MCPWH_* code. Codes -1..-8 come from the host (ABI.md);
 *     codes <= -100 are produced by this SDK and never by the host.
 *   - The JSON reader returns MCPWH_JSON_* codes (0 or negative).
 *   - Every buffer returned through a `char **` out-parameter is malloc'd,
 *     NUL-terminated, and owned by the caller (free() it). Decoded JSON
 *     strings may contain NUL bytes (from "\u0000"), so use the length.
 *
 * License: MIT. Copyright (c) the mcp-wasmhost authors.
 *
 * Permission is hereby granted, free of charge, to any person obtaining a copy
 * of this software and associated documentation files (the "Software"), to
 * deal in the Software without restriction, including without limitation the
 * rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
 * sell copies of the Software, and to permit persons to whom the Software is
 * furnished to do so, subject to the following conditions: The above copyright
 * notice and this permission notice shall be included in all copies or
 * substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
 * WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED.
 */
#ifndef MCPWH_H
#define MCPWH_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions, status codes, log levels                                        */
/* ------------------------------------------------------------------------ */

/** The guest ABI version this header implements (what mcpwh_abi_version returns). */
#define MCPWH_ABI_VERSION 1

/* Status codes returned by the host functions (ABI.md, "Status codes"). */
#define MCPWH_OK            0  /* success */
#define MCPWH_BAD_POINTER  (-1) /* a pointer/length pair lies outside the guest's memory */
#define MCPWH_TOO_LARGE    (-2) /* a buffer exceeds its limit */
#define MCPWH_INVALID      (-3) /* not valid UTF-8 / JSON / a JSON object, or a bad level */
#define MCPWH_UNSUPPORTED  (-4) /* unknown request method */
#define MCPWH_UNAVAILABLE  (-5) /* request not possible here (capability missing, or describing) */
#define MCPWH_FAILED       (-6) /* request reached the client and failed; reply is {"error": string} */
#define MCPWH_LIMIT        (-7) /* too many host calls of this kind in one call */
#define MCPWH_NO_DATA      (-8) /* reply_read before any reply */

/* Status codes produced by this SDK only (never by the host). */
#define MCPWH_NO_MEMORY   (-100) /* malloc/realloc failed inside the guest */
#define MCPWH_SHORT_READ  (-101) /* the host copied fewer bytes than it announced */
#define MCPWH_BAD_INPUT   (-102) /* the call input is neither {"tool": string, "arguments": object}
                                    nor {"method": string, "params": object} (ABI v1.1) */

/* Log levels for mcpwh_log / mcpwh_logf (ABI.md, `log`). */
#define MCPWH_LOG_DEBUG   0
#define MCPWH_LOG_INFO    1
#define MCPWH_LOG_NOTICE  2
#define MCPWH_LOG_WARNING 3
#define MCPWH_LOG_ERROR   4

/* ------------------------------------------------------------------------ */
/* Compiler glue                                                             */
/* ------------------------------------------------------------------------ */

/* Every helper is static (one copy per translation unit) and marked unused so
 * that including the header without calling everything raises no warning. */
#define MCPWH_API static __attribute__((unused))

#if defined(__GNUC__) || defined(__clang__)
#define MCPWH_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define MCPWH_PRINTF(fmt_index, first_arg)
#endif

#if defined(__wasm__)
#define MCPWH_IMPORT(name) __attribute__((import_module("mcpwh"), import_name(name)))
#define MCPWH_EXPORT(name) __attribute__((export_name(name)))
#else
/* Native builds (unit tests, fuzzers) must define the mcpwh_host_* functions
 * themselves; the exports are then ordinary functions. */
#define MCPWH_IMPORT(name)
#define MCPWH_EXPORT(name)
#endif

/* ------------------------------------------------------------------------ */
/* Raw host imports: module "mcpwh" (ABI.md, "Host functions")               */
/* ------------------------------------------------------------------------ */
/*
 * These are the ABI functions exactly as the host provides them; pointers are
 * offsets into this module's linear memory (a plain C pointer on wasm32).
 * Each returns >= 0 on success (a count where ABI.md states one, else 0) or a
 * negative status code. The helpers further down are usually more convenient.
 */

/** Length in bytes of the current input document (the call request). */
MCPWH_IMPORT("input_len")
int32_t mcpwh_host_input_len(void);

/** Copies min(len, input_len) bytes of the input (from its start) to buf; returns the count. */
MCPWH_IMPORT("input_read")
int32_t mcpwh_host_input_read(void *buf, int32_t len);

/** Sets the output document to buf[0..len), replacing any earlier output. */
MCPWH_IMPORT("output_write")
int32_t mcpwh_host_output_write(const void *buf, int32_t len);

/** Logs one UTF-8 line at `level` (MCPWH_LOG_*). */
MCPWH_IMPORT("log")
int32_t mcpwh_host_log(int32_t level, const char *msg, int32_t len);

/** Reports progress; total <= 0 means unknown; len may be 0. */
MCPWH_IMPORT("progress")
int32_t mcpwh_host_progress(double progress, double total, const char *msg, int32_t len);

/** Sends a request (e.g. "elicit") and blocks for its answer; returns the reply length. */
MCPWH_IMPORT("request")
int32_t mcpwh_host_request(const char *method, int32_t method_len,
                           const char *params, int32_t params_len);

/** Copies min(len, reply_len) bytes of the last reply (from its start) to buf; returns the count. */
MCPWH_IMPORT("reply_read")
int32_t mcpwh_host_reply_read(void *buf, int32_t len);

/* ------------------------------------------------------------------------ */
/* Exports                                                                   */
/* ------------------------------------------------------------------------ */
/*
 * A plugin exports exactly three functions. MCPWH_PLUGIN defines all of them:
 *
 *   static int32_t my_describe(void);   // writes the manifest, returns 0
 *   static int32_t my_call(void);       // handles one tools/call, returns 0
 *   MCPWH_PLUGIN(my_describe, my_call)
 *
 * which expands to
 *
 *   __attribute__((export_name("mcpwh_abi_version"))) int32_t mcpwh_abi_version(void) { return 1; }
 *   __attribute__((export_name("mcpwh_describe")))    int32_t mcpwh_describe(void) { return my_describe(); }
 *   __attribute__((export_name("mcpwh_call")))        int32_t mcpwh_call(void) { return my_call(); }
 *
 * A non-zero return from describe refuses the plugin; from call it fails the
 * call. In both cases the last output written is shown as the reason, so write
 * a message first (mcpwh_fail does both). A tool-level failure the model should
 * see (bad argument, missing file) is not a failed call: write a result with
 * isError set (mcpwh_result_errorf) and return 0.
 *
 * `memory` and `_initialize` are exported by the toolchain (-mexec-model=reactor).
 */
#define MCPWH_PLUGIN(describe_fn, call_fn)                                       \
    MCPWH_EXPORT("mcpwh_abi_version") int32_t mcpwh_abi_version(void);           \
    MCPWH_EXPORT("mcpwh_describe") int32_t mcpwh_describe(void);                 \
    MCPWH_EXPORT("mcpwh_call") int32_t mcpwh_call(void);                         \
    int32_t mcpwh_abi_version(void) { return MCPWH_ABI_VERSION; }                \
    int32_t mcpwh_describe(void) { return (describe_fn)(); }                     \
    int32_t mcpwh_call(void) { return (call_fn)(); }

/* ------------------------------------------------------------------------ */
/* UTF-8                                                                     */
/* ------------------------------------------------------------------------ */

/**
 * Decodes one UTF-8 sequence at s[0..n). Returns its length (1-4) and stores
 * the code point in *cp, or returns 0 if the bytes there are not a valid
 * sequence (truncated, overlong, surrogate, above U+10FFFF, stray
 * continuation byte). Never reads s[n] or beyond.
 */
MCPWH_API size_t mcpwh_utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    uint32_t c;
    if (n == 0)
        return 0;
    c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c < 0xC2) /* continuation byte, or overlong 2-byte lead */
        return 0;
    if (c < 0xE0) {
        if (n < 2 || (s[1] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x1F) << 6) | (s[1] & 0x3Fu);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80)
            return 0;
        if (c == 0xE0 && s[1] < 0xA0) /* overlong */
            return 0;
        if (c == 0xED && s[1] >= 0xA0) /* UTF-16 surrogate */
            return 0;
        *cp = ((c & 0x0F) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
            return 0;
        if (c == 0xF0 && s[1] < 0x90) /* overlong */
            return 0;
        if (c == 0xF4 && s[1] >= 0x90) /* above U+10FFFF */
            return 0;
        *cp = ((c & 0x07) << 18) | ((s[1] & 0x3Fu) << 12) | ((s[2] & 0x3Fu) << 6) | (s[3] & 0x3Fu);
        return 4;
    }
    return 0;
}

/**
 * Encodes code point cp (<= U+10FFFF, not a surrogate; anything else becomes
 * U+FFFD) into out. Returns the number of bytes written (1-4).
 */
MCPWH_API size_t mcpwh_utf8_encode(uint32_t cp, unsigned char out[4])
{
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        cp = 0xFFFD;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/**
 * Returns 1 if s[0..n) is entirely valid UTF-8, else 0 and, if bad_offset is
 * not NULL, the byte offset of the first invalid sequence.
 */
MCPWH_API int mcpwh_utf8_valid(const char *s, size_t n, size_t *bad_offset)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        size_t k;
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        k = mcpwh_utf8_decode(p + i, n - i, &cp);
        if (k == 0) {
            if (bad_offset)
                *bad_offset = i;
            return 0;
        }
        i += k;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Growable buffer and JSON writer                                           */
/* ------------------------------------------------------------------------ */

/**
 * A growable byte buffer. Zero-initialise it (MCPWH_BUF_INIT), append, and
 * free it with mcpwh_buf_free. `data` is NUL-terminated whenever it is not
 * NULL. An allocation failure is sticky: `failed` is set, every later append
 * is a no-op returning -1, so a sequence of appends can be checked once.
 */
typedef struct mcpwh_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} mcpwh_buf;

#define MCPWH_BUF_INIT { NULL, 0, 0, 0 }

/** Releases the buffer's memory and resets it to empty. */
MCPWH_API void mcpwh_buf_free(mcpwh_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->failed = 0;
}

/** Ensures room for `extra` more bytes (plus the NUL). Returns 0, or -1 on failure. */
MCPWH_API int mcpwh_buf_reserve(mcpwh_buf *b, size_t extra)
{
    size_t need, cap;
    char *d;
    if (b->failed)
        return -1;
    if (b->data != NULL && extra < b->cap - b->len)
        return 0;
    if (extra > SIZE_MAX - 1 - b->len)
        goto fail;
    need = b->len + extra + 1;
    cap = b->cap ? b->cap : 64;
    while (cap < need) {
        if (cap > SIZE_MAX / 2) {
            cap = need;
            break;
        }
        cap *= 2;
    }
    d = (char *)realloc(b->data, cap);
    if (d == NULL)
        goto fail;
    b->data = d;
    b->cap = cap;
    return 0;
fail:
    b->failed = 1;
    return -1;
}

/** Appends n raw bytes. Returns 0, or -1 on allocation failure. */
MCPWH_API int mcpwh_buf_append(mcpwh_buf *b, const void *data, size_t n)
{
    if (mcpwh_buf_reserve(b, n) != 0)
        return -1;
    if (n > 0)
        memcpy(b->data + b->len, data, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

/** Appends a NUL-terminated string, raw (no escaping). */
MCPWH_API int mcpwh_buf_puts(mcpwh_buf *b, const char *s)
{
    return mcpwh_buf_append(b, s, strlen(s));
}

/** Appends one byte. */
MCPWH_API int mcpwh_buf_putc(mcpwh_buf *b, char c)
{
    return mcpwh_buf_append(b, &c, 1);
}

/** Appends printf-style formatted text, raw (no escaping). */
MCPWH_API MCPWH_PRINTF(2, 0) int mcpwh_buf_vprintf(mcpwh_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    int n;
    va_copy(ap2, ap);
    n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        b->failed = 1;
        return -1;
    }
    if (mcpwh_buf_reserve(b, (size_t)n) != 0)
        return -1;
    vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

MCPWH_API MCPWH_PRINTF(2, 3) int mcpwh_buf_printf(mcpwh_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;
    va_start(ap, fmt);
    rc = mcpwh_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

/**
 * Appends s[0..n) as text with every invalid UTF-8 byte replaced by U+FFFD,
 * so the buffer stays valid UTF-8 whatever the input.
 */
MCPWH_API int mcpwh_buf_append_utf8_lossy(mcpwh_buf *b, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    uint32_t cp;
    while (p < end) {
        const unsigned char *run = p;
        size_t k = 0;
        while (p < end && (k = mcpwh_utf8_decode(p, (size_t)(end - p), &cp)) != 0)
            p += k;
        if (p > run && mcpwh_buf_append(b, run, (size_t)(p - run)) != 0)
            return -1;
        if (p < end) {
            if (mcpwh_buf_append(b, "\xEF\xBF\xBD", 3) != 0)
                return -1;
            p++;
        }
    }
    return mcpwh_buf_reserve(b, 0);
}

/**
 * Appends s[0..n) as a JSON string literal, quotes included. Escapes '"',
 * '\\' and all control characters below U+0020 (\b \f \n \r \t, else
 * \u00XX); copies valid UTF-8 as is; replaces each byte of invalid UTF-8 with
 * U+FFFD, so the output is always valid JSON and valid UTF-8.
 */
MCPWH_API int mcpwh_buf_json_string(mcpwh_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    if (mcpwh_buf_putc(b, '"') != 0)
        return -1;
    while (p < end) {
        const unsigned char *run = p;
        char esc[6];
        size_t esc_len = 2;
        uint32_t cp;
        size_t k;
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        if (p > run && mcpwh_buf_append(b, run, (size_t)(p - run)) != 0)
            return -1;
        if (p >= end)
            break;
        if (*p >= 0x80) {
            k = mcpwh_utf8_decode(p, (size_t)(end - p), &cp);
            if (k == 0) {
                if (mcpwh_buf_append(b, "\xEF\xBF\xBD", 3) != 0)
                    return -1;
                p++;
            } else {
                if (mcpwh_buf_append(b, p, k) != 0)
                    return -1;
                p += k;
            }
            continue;
        }
        esc[0] = '\\';
        switch (*p) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[*p >> 4];
            esc[5] = hex[*p & 0xF];
            esc_len = 6;
            break;
        }
        if (mcpwh_buf_append(b, esc, esc_len) != 0)
            return -1;
        p++;
    }
    return mcpwh_buf_putc(b, '"');
}

/** Appends a NUL-terminated C string as a JSON string literal (see mcpwh_buf_json_string). */
MCPWH_API int mcpwh_buf_json_cstr(mcpwh_buf *b, const char *s)
{
    return mcpwh_buf_json_string(b, s, strlen(s));
}

/**
 * Appends a JSON number: the shortest of %.15g / %.17g that reads back as the
 * same double. NaN and infinities have no JSON form and are written as null.
 */
MCPWH_API int mcpwh_buf_json_number(mcpwh_buf *b, double d)
{
    char tmp[40];
    if (!isfinite(d))
        return mcpwh_buf_puts(b, "null");
    snprintf(tmp, sizeof tmp, "%.15g", d);
    if (strtod(tmp, NULL) != d)
        snprintf(tmp, sizeof tmp, "%.17g", d);
    return mcpwh_buf_puts(b, tmp);
}

/** Appends a JSON integer (exact, unlike doubles beyond 2^53). */
MCPWH_API int mcpwh_buf_json_int(mcpwh_buf *b, int64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%" PRId64, v);
    return mcpwh_buf_puts(b, tmp);
}

/** Appends `true` or `false`. */
MCPWH_API int mcpwh_buf_json_bool(mcpwh_buf *b, int v)
{
    return mcpwh_buf_puts(b, v ? "true" : "false");
}

/* ------------------------------------------------------------------------ */
/* JSON reader                                                               */
/* ------------------------------------------------------------------------ */
/*
 * A small, strict (RFC 8259) reader for tool arguments. It never allocates
 * except to return decoded strings, never reads outside the span it is given
 * (no NUL terminator is needed or used), limits nesting to
 * MCPWH_JSON_MAX_DEPTH, and rejects malformed input instead of guessing:
 * treat every input as hostile.
 *
 * Values are handled as spans (pointer + length) into the original text:
 * mcpwh_json_member finds a member of an object and returns its value's span,
 * which the mcpwh_json_decode_* functions turn into C values. The
 * mcpwh_json_get_* functions do both in one step.
 *
 * Objects: when a key occurs more than once the LAST occurrence wins (as in
 * Go's encoding/json and JavaScript's JSON.parse, so the guest sees the value
 * the host validated). Looking up a member scans and validates the whole object.
 *
 * Strings: escapes are decoded, \uXXXX surrogate pairs are combined, and an
 * unpaired surrogate escape becomes U+FFFD (as Go's encoding/json does), so a
 * decoded string is always valid UTF-8. Raw bytes in strings must be valid
 * UTF-8 and not control characters, else the text is malformed.
 */

#define MCPWH_JSON_MAX_DEPTH 128

/* Reader result codes. */
#define MCPWH_JSON_OK           0
#define MCPWH_JSON_MISSING    (-1) /* the object has no member with that key */
#define MCPWH_JSON_WRONG_TYPE (-2) /* the value is valid JSON of another type (or a non-integral number) */
#define MCPWH_JSON_SYNTAX     (-3) /* malformed JSON */
#define MCPWH_JSON_RANGE      (-4) /* a number that does not fit the requested C type */
#define MCPWH_JSON_NO_MEMORY  (-5) /* malloc failed */

/* Value types, as returned by mcpwh_json_type. */
#define MCPWH_JSON_T_INVALID 0
#define MCPWH_JSON_T_NULL    1
#define MCPWH_JSON_T_BOOL    2
#define MCPWH_JSON_T_NUMBER  3
#define MCPWH_JSON_T_STRING  4
#define MCPWH_JSON_T_ARRAY   5
#define MCPWH_JSON_T_OBJECT  6

/** A read-only view of bytes: ptr[0..len). Not NUL-terminated in general. */
typedef struct mcpwh_span {
    const char *ptr;
    size_t len;
} mcpwh_span;

/** Makes a span. */
MCPWH_API mcpwh_span mcpwh_span_of(const char *ptr, size_t len)
{
    mcpwh_span s;
    s.ptr = ptr;
    s.len = len;
    return s;
}

/** Makes a span of a NUL-terminated string (without the NUL). */
MCPWH_API mcpwh_span mcpwh_span_cstr(const char *s)
{
    return mcpwh_span_of(s, strlen(s));
}

/** A short English description of a MCPWH_JSON_* code. */
MCPWH_API const char *mcpwh_json_strerror(int code)
{
    switch (code) {
    case MCPWH_JSON_OK: return "ok";
    case MCPWH_JSON_MISSING: return "missing";
    case MCPWH_JSON_WRONG_TYPE: return "wrong type";
    case MCPWH_JSON_SYNTAX: return "malformed JSON";
    case MCPWH_JSON_RANGE: return "number out of range";
    case MCPWH_JSON_NO_MEMORY: return "out of memory";
    default: return "unknown error";
    }
}

/* --- internals (names starting with mcpwh__ are not part of the API) --- */

static __attribute__((unused)) const unsigned char *
mcpwh__ws(const unsigned char *p, const unsigned char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static __attribute__((unused)) int mcpwh__hex4(const unsigned char *p, uint32_t *out)
{
    uint32_t v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        unsigned c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return 0;
    }
    *out = v;
    return 1;
}

/*
 * One step through a string token. *pp points inside the string (after the
 * opening quote). Returns 0 after consuming the closing quote, -1 on malformed
 * input, or 1-4: the number of UTF-8 bytes of the next character, stored in out.
 */
static __attribute__((unused)) int
mcpwh__str_step(const unsigned char **pp, const unsigned char *end, unsigned char out[4])
{
    const unsigned char *p = *pp;
    uint32_t cp, lo;
    size_t k;
    if (p >= end)
        return -1;
    if (*p == '"') {
        *pp = p + 1;
        return 0;
    }
    if (*p < 0x20)
        return -1;
    if (*p < 0x80 && *p != '\\') {
        out[0] = *p;
        *pp = p + 1;
        return 1;
    }
    if (*p >= 0x80) {
        k = mcpwh_utf8_decode(p, (size_t)(end - p), &cp);
        if (k == 0)
            return -1;
        memcpy(out, p, k);
        *pp = p + k;
        return (int)k;
    }
    /* backslash escape */
    if (end - p < 2)
        return -1;
    switch (p[1]) {
    case '"': out[0] = '"'; break;
    case '\\': out[0] = '\\'; break;
    case '/': out[0] = '/'; break;
    case 'b': out[0] = '\b'; break;
    case 'f': out[0] = '\f'; break;
    case 'n': out[0] = '\n'; break;
    case 'r': out[0] = '\r'; break;
    case 't': out[0] = '\t'; break;
    case 'u':
        if (end - p < 6 || !mcpwh__hex4(p + 2, &cp))
            return -1;
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - p >= 6 && p[0] == '\\' && p[1] == 'u' && mcpwh__hex4(p + 2, &lo) &&
                lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                p += 6;
            } else {
                cp = 0xFFFD; /* unpaired high surrogate */
            }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD; /* unpaired low surrogate */
        }
        *pp = p;
        return (int)mcpwh_utf8_encode(cp, out);
    default:
        return -1;
    }
    *pp = p + 2;
    return 1;
}

/* Skips a string token; *pp points after the opening quote. 0 ok, -1 malformed. */
static __attribute__((unused)) int mcpwh__skip_string(const unsigned char **pp, const unsigned char *end)
{
    unsigned char tmp[4];
    for (;;) {
        const unsigned char *p = *pp;
        int r;
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        *pp = p;
        r = mcpwh__str_step(pp, end, tmp);
        if (r <= 0)
            return r;
    }
}

static __attribute__((unused)) int mcpwh__is_digit(const unsigned char *p, const unsigned char *end)
{
    return p < end && *p >= '0' && *p <= '9';
}

/* Scans a number token; returns the end of it or NULL. *is_int: no fraction/exponent. */
static __attribute__((unused)) const unsigned char *
mcpwh__scan_number(const unsigned char *p, const unsigned char *end, int *is_int)
{
    *is_int = 1;
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (mcpwh__is_digit(p, end))
            p++;
    } else {
        return NULL;
    }
    if (p < end && *p == '.') {
        *is_int = 0;
        p++;
        if (!mcpwh__is_digit(p, end))
            return NULL;
        while (mcpwh__is_digit(p, end))
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_int = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (!mcpwh__is_digit(p, end))
            return NULL;
        while (mcpwh__is_digit(p, end))
            p++;
    }
    return p;
}

static __attribute__((unused)) int
mcpwh__literal(const unsigned char **pp, const unsigned char *end, const char *lit, size_t n)
{
    if ((size_t)(end - *pp) < n || memcmp(*pp, lit, n) != 0)
        return -1;
    *pp += n;
    return 0;
}

/* Skips one value starting exactly at *pp (no leading whitespace). 0 ok, -1 malformed. */
static __attribute__((unused)) int
mcpwh__skip_value(const unsigned char **pp, const unsigned char *end, int depth)
{
    const unsigned char *p = *pp;
    int is_int;
    if (p >= end)
        return -1;
    switch (*p) {
    case '"':
        p++;
        if (mcpwh__skip_string(&p, end) != 0)
            return -1;
        break;
    case '{':
    case '[': {
        const int is_obj = (*p == '{');
        const unsigned char close = is_obj ? '}' : ']';
        if (depth >= MCPWH_JSON_MAX_DEPTH)
            return -1;
        p = mcpwh__ws(p + 1, end);
        if (p < end && *p == close) {
            p++;
            break;
        }
        for (;;) {
            if (is_obj) {
                if (p >= end || *p != '"')
                    return -1;
                p++;
                if (mcpwh__skip_string(&p, end) != 0)
                    return -1;
                p = mcpwh__ws(p, end);
                if (p >= end || *p != ':')
                    return -1;
                p = mcpwh__ws(p + 1, end);
            }
            if (mcpwh__skip_value(&p, end, depth + 1) != 0)
                return -1;
            p = mcpwh__ws(p, end);
            if (p >= end)
                return -1;
            if (*p == ',') {
                p = mcpwh__ws(p + 1, end);
                continue;
            }
            if (*p != close)
                return -1;
            p++;
            break;
        }
        break;
    }
    case 't':
        if (mcpwh__literal(&p, end, "true", 4) != 0)
            return -1;
        break;
    case 'f':
        if (mcpwh__literal(&p, end, "false", 5) != 0)
            return -1;
        break;
    case 'n':
        if (mcpwh__literal(&p, end, "null", 4) != 0)
            return -1;
        break;
    default:
        p = mcpwh__scan_number(p, end, &is_int);
        if (p == NULL)
            return -1;
        break;
    }
    *pp = p;
    return 0;
}

static __attribute__((unused)) int mcpwh__type_of_byte(unsigned char c)
{
    switch (c) {
    case '{': return MCPWH_JSON_T_OBJECT;
    case '[': return MCPWH_JSON_T_ARRAY;
    case '"': return MCPWH_JSON_T_STRING;
    case 't': case 'f': return MCPWH_JSON_T_BOOL;
    case 'n': return MCPWH_JSON_T_NULL;
    default:
        return (c == '-' || (c >= '0' && c <= '9')) ? MCPWH_JSON_T_NUMBER : MCPWH_JSON_T_INVALID;
    }
}

/* --- public reader API --- */

/**
 * The type of the value in span v, judged by its first non-whitespace byte
 * (MCPWH_JSON_T_*). Cheap, and does not validate the rest: use it on spans
 * returned by mcpwh_json_member (already validated) or after mcpwh_json_validate.
 */
MCPWH_API int mcpwh_json_type(mcpwh_span v)
{
    const unsigned char *p = (const unsigned char *)v.ptr, *end = p + v.len;
    p = mcpwh__ws(p, end);
    return p < end ? mcpwh__type_of_byte(*p) : MCPWH_JSON_T_INVALID;
}

/** "null", "boolean", "number", "string", "array", "object" or "invalid". */
MCPWH_API const char *mcpwh_json_type_name(int type)
{
    switch (type) {
    case MCPWH_JSON_T_NULL: return "null";
    case MCPWH_JSON_T_BOOL: return "boolean";
    case MCPWH_JSON_T_NUMBER: return "number";
    case MCPWH_JSON_T_STRING: return "string";
    case MCPWH_JSON_T_ARRAY: return "array";
    case MCPWH_JSON_T_OBJECT: return "object";
    default: return "invalid";
    }
}

/** MCPWH_JSON_OK if doc is exactly one well-formed JSON value (whitespace around it allowed). */
MCPWH_API int mcpwh_json_validate(mcpwh_span doc)
{
    const unsigned char *p = (const unsigned char *)doc.ptr, *end = p + doc.len;
    p = mcpwh__ws(p, end);
    if (mcpwh__skip_value(&p, end, 0) != 0)
        return MCPWH_JSON_SYNTAX;
    return mcpwh__ws(p, end) == end ? MCPWH_JSON_OK : MCPWH_JSON_SYNTAX;
}

/**
 * Iterator over the members of an object, in document order:
 *
 *   mcpwh_json_iter it;
 *   mcpwh_span key, val;
 *   int r;
 *   if (mcpwh_json_object_begin(&it, obj) != MCPWH_JSON_OK) ...;
 *   while ((r = mcpwh_json_object_next(&it, &key, &val)) == 1) { ... }
 *   if (r < 0) ...;  // malformed (possibly after some members were returned)
 *
 * `key` is the raw string token including its quotes (compare it with
 * mcpwh_json_key_is, decode it with mcpwh_json_decode_string); `val` is the raw
 * value, already validated. next returns 0 only when the whole object,
 * including anything after its closing brace, has been checked.
 */
typedef struct mcpwh_json_iter {
    const unsigned char *p;
    const unsigned char *end;
    int state; /* 0 before first member, 1 after a member, 2 done, -1 malformed */
} mcpwh_json_iter;

/** Starts iterating over the object in span obj (whitespace around it allowed). */
MCPWH_API int mcpwh_json_object_begin(mcpwh_json_iter *it, mcpwh_span obj)
{
    const unsigned char *p = (const unsigned char *)obj.ptr, *end = p + obj.len;
    p = mcpwh__ws(p, end);
    it->end = end;
    it->state = -1;
    if (p >= end)
        return MCPWH_JSON_SYNTAX;
    if (*p != '{')
        return mcpwh__type_of_byte(*p) == MCPWH_JSON_T_INVALID ? MCPWH_JSON_SYNTAX
                                                                : MCPWH_JSON_WRONG_TYPE;
    it->p = p + 1;
    it->state = 0;
    return MCPWH_JSON_OK;
}

/** Next member: 1 (key/val set), 0 at the end, MCPWH_JSON_SYNTAX if malformed. */
MCPWH_API int mcpwh_json_object_next(mcpwh_json_iter *it, mcpwh_span *key, mcpwh_span *val)
{
    const unsigned char *p, *end = it->end, *k0, *v0;
    if (it->state == 2)
        return 0;
    if (it->state < 0)
        return MCPWH_JSON_SYNTAX;
    p = mcpwh__ws(it->p, end);
    if (p >= end)
        goto bad;
    if (*p == '}')
        goto close;
    if (it->state == 1) {
        if (*p != ',')
            goto bad;
        p = mcpwh__ws(p + 1, end);
    }
    if (p >= end || *p != '"')
        goto bad;
    k0 = p++;
    if (mcpwh__skip_string(&p, end) != 0)
        goto bad;
    key->ptr = (const char *)k0;
    key->len = (size_t)(p - k0);
    p = mcpwh__ws(p, end);
    if (p >= end || *p != ':')
        goto bad;
    p = mcpwh__ws(p + 1, end);
    v0 = p;
    if (mcpwh__skip_value(&p, end, 1) != 0)
        goto bad;
    val->ptr = (const char *)v0;
    val->len = (size_t)(p - v0);
    it->p = p;
    it->state = 1;
    return 1;
close:
    if (mcpwh__ws(p + 1, end) != end)
        goto bad;
    it->p = end;
    it->state = 2;
    return 0;
bad:
    it->state = -1;
    return MCPWH_JSON_SYNTAX;
}

/**
 * 1 if the string token `key` (as returned by mcpwh_json_object_next, quotes
 * included) decodes to exactly name[0..name_len), else 0.
 */
MCPWH_API int mcpwh_json_key_is_n(mcpwh_span key, const char *name, size_t name_len)
{
    const unsigned char *p = (const unsigned char *)key.ptr, *end = p + key.len;
    const unsigned char *want = (const unsigned char *)name;
    size_t i = 0;
    unsigned char ch[4];
    if (p >= end || *p != '"')
        return 0;
    p++;
    for (;;) {
        int r = mcpwh__str_step(&p, end, ch);
        if (r < 0)
            return 0;
        if (r == 0)
            return i == name_len && p == end;
        if ((size_t)r > name_len - i || memcmp(want + i, ch, (size_t)r) != 0)
            return 0;
        i += (size_t)r;
    }
}

/** mcpwh_json_key_is_n for a NUL-terminated name. */
MCPWH_API int mcpwh_json_key_is(mcpwh_span key, const char *name)
{
    return mcpwh_json_key_is_n(key, name, strlen(name));
}

/**
 * Finds member `key` of the object in span obj and stores its raw value span
 * in *val. Returns MCPWH_JSON_OK, MCPWH_JSON_MISSING, MCPWH_JSON_WRONG_TYPE
 * (obj is not an object) or MCPWH_JSON_SYNTAX. The whole object is scanned and
 * validated; if the key repeats, the last occurrence wins.
 */
MCPWH_API int mcpwh_json_member(mcpwh_span obj, const char *key, mcpwh_span *val)
{
    mcpwh_json_iter it;
    mcpwh_span k, v;
    size_t key_len = strlen(key);
    int found = 0, r;
    r = mcpwh_json_object_begin(&it, obj);
    if (r != MCPWH_JSON_OK)
        return r;
    while ((r = mcpwh_json_object_next(&it, &k, &v)) == 1) {
        if (mcpwh_json_key_is_n(k, key, key_len)) {
            *val = v;
            found = 1;
        }
    }
    if (r < 0)
        return r;
    return found ? MCPWH_JSON_OK : MCPWH_JSON_MISSING;
}

/*
 * Checks that span v holds one value of the wanted type (by first byte) and
 * returns a pointer to that byte, or NULL with *err set.
 */
static __attribute__((unused)) const unsigned char *
mcpwh__value_start(mcpwh_span v, int want, int *err)
{
    const unsigned char *p = (const unsigned char *)v.ptr, *end = p + v.len;
    int t;
    p = mcpwh__ws(p, end);
    t = p < end ? mcpwh__type_of_byte(*p) : MCPWH_JSON_T_INVALID;
    if (t == want)
        return p;
    *err = t == MCPWH_JSON_T_INVALID ? MCPWH_JSON_SYNTAX : MCPWH_JSON_WRONG_TYPE;
    return NULL;
}

/**
 * Decodes the JSON string in span v (a string token, whitespace around it
 * allowed) into a malloc'd, NUL-terminated UTF-8 buffer. *out_len (if not
 * NULL) receives its length, which may be less than strlen would say when the
 * string contains "\u0000". On error *out is NULL.
 */
MCPWH_API int mcpwh_json_decode_string(mcpwh_span v, char **out, size_t *out_len)
{
    const unsigned char *end = (const unsigned char *)v.ptr + v.len, *p;
    unsigned char *buf;
    size_t n = 0;
    int err = MCPWH_JSON_SYNTAX;
    *out = NULL;
    if (out_len)
        *out_len = 0;
    p = mcpwh__value_start(v, MCPWH_JSON_T_STRING, &err);
    if (p == NULL)
        return err;
    p++;
    /* The decoded form is never longer than the escaped form. */
    buf = (unsigned char *)malloc((size_t)(end - p) + 1);
    if (buf == NULL)
        return MCPWH_JSON_NO_MEMORY;
    for (;;) {
        const unsigned char *run = p;
        int r;
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
            p++;
        memcpy(buf + n, run, (size_t)(p - run));
        n += (size_t)(p - run);
        r = mcpwh__str_step(&p, end, buf + n);
        if (r < 0)
            goto bad;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    if (mcpwh__ws(p, end) != end)
        goto bad;
    buf[n] = '\0';
    *out = (char *)buf;
    if (out_len)
        *out_len = n;
    return MCPWH_JSON_OK;
bad:
    free(buf);
    return MCPWH_JSON_SYNTAX;
}

/*
 * Converts the number token at p..q (already validated) with strtod; ERANGE
 * overflow shows up as an infinity.
 */
static __attribute__((unused)) int
mcpwh__strtod(const unsigned char *p, const unsigned char *q, double *out)
{
    char small[64];
    size_t n = (size_t)(q - p);
    char *tmp = n < sizeof small ? small : (char *)malloc(n + 1);
    double d;
    if (tmp == NULL)
        return MCPWH_JSON_NO_MEMORY;
    memcpy(tmp, p, n);
    tmp[n] = '\0';
    d = strtod(tmp, NULL);
    if (tmp != small)
        free(tmp);
    if (!isfinite(d))
        return MCPWH_JSON_RANGE;
    *out = d;
    return MCPWH_JSON_OK;
}

/** Decodes the number in span v as a double. Overflow (e.g. 1e999) is MCPWH_JSON_RANGE. */
MCPWH_API int mcpwh_json_decode_number(mcpwh_span v, double *out)
{
    const unsigned char *end = (const unsigned char *)v.ptr + v.len, *p, *q;
    int err = MCPWH_JSON_SYNTAX, is_int;
    p = mcpwh__value_start(v, MCPWH_JSON_T_NUMBER, &err);
    if (p == NULL)
        return err;
    q = mcpwh__scan_number(p, end, &is_int);
    if (q == NULL || mcpwh__ws(q, end) != end)
        return MCPWH_JSON_SYNTAX;
    return mcpwh__strtod(p, q, out);
}

/**
 * Decodes the number in span v as an int64_t. Plain integers are converted
 * exactly; numbers written with a fraction or exponent are accepted when their
 * value is integral (2.0, 1e3), as JSON Schema's "integer" does. A fractional
 * value is MCPWH_JSON_WRONG_TYPE; one outside int64_t is MCPWH_JSON_RANGE.
 */
MCPWH_API int mcpwh_json_decode_int(mcpwh_span v, int64_t *out)
{
    const unsigned char *end = (const unsigned char *)v.ptr + v.len, *p, *q;
    int err = MCPWH_JSON_SYNTAX, is_int, neg;
    p = mcpwh__value_start(v, MCPWH_JSON_T_NUMBER, &err);
    if (p == NULL)
        return err;
    q = mcpwh__scan_number(p, end, &is_int);
    if (q == NULL || mcpwh__ws(q, end) != end)
        return MCPWH_JSON_SYNTAX;
    if (is_int) {
        uint64_t limit, acc = 0;
        neg = (*p == '-');
        limit = (uint64_t)INT64_MAX + (neg ? 1u : 0u);
        for (p += neg; p < q; p++) {
            uint64_t d = (uint64_t)(*p - '0');
            if (acc > (limit - d) / 10)
                return MCPWH_JSON_RANGE;
            acc = acc * 10 + d;
        }
        if (!neg)
            *out = (int64_t)acc;
        else if (acc == (uint64_t)INT64_MAX + 1u)
            *out = INT64_MIN;
        else
            *out = -(int64_t)acc;
        return MCPWH_JSON_OK;
    } else {
        double d;
        int64_t i;
        int r = mcpwh__strtod(p, q, &d);
        if (r != MCPWH_JSON_OK)
            return r;
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0))
            return MCPWH_JSON_RANGE;
        i = (int64_t)d;
        if ((double)i != d)
            return MCPWH_JSON_WRONG_TYPE;
        *out = i;
        return MCPWH_JSON_OK;
    }
}

/** Decodes `true`/`false` in span v into *out (1/0). */
MCPWH_API int mcpwh_json_decode_bool(mcpwh_span v, int *out)
{
    const unsigned char *end = (const unsigned char *)v.ptr + v.len, *p;
    int err = MCPWH_JSON_SYNTAX, val;
    p = mcpwh__value_start(v, MCPWH_JSON_T_BOOL, &err);
    if (p == NULL)
        return err;
    val = (*p == 't');
    if (mcpwh__literal(&p, end, val ? "true" : "false", val ? 4 : 5) != 0 || mcpwh__ws(p, end) != end)
        return MCPWH_JSON_SYNTAX;
    *out = val;
    return MCPWH_JSON_OK;
}

/** Member `key` of object obj, decoded as a string (see mcpwh_json_decode_string). */
MCPWH_API int mcpwh_json_get_string(mcpwh_span obj, const char *key, char **out, size_t *out_len)
{
    mcpwh_span v;
    int r = mcpwh_json_member(obj, key, &v);
    *out = NULL;
    if (out_len)
        *out_len = 0;
    return r != MCPWH_JSON_OK ? r : mcpwh_json_decode_string(v, out, out_len);
}

/** Member `key` of object obj, decoded as a double. */
MCPWH_API int mcpwh_json_get_number(mcpwh_span obj, const char *key, double *out)
{
    mcpwh_span v;
    int r = mcpwh_json_member(obj, key, &v);
    return r != MCPWH_JSON_OK ? r : mcpwh_json_decode_number(v, out);
}

/** Member `key` of object obj, decoded as an int64_t. */
MCPWH_API int mcpwh_json_get_int(mcpwh_span obj, const char *key, int64_t *out)
{
    mcpwh_span v;
    int r = mcpwh_json_member(obj, key, &v);
    return r != MCPWH_JSON_OK ? r : mcpwh_json_decode_int(v, out);
}

/** Member `key` of object obj, decoded as a bool (1/0). */
MCPWH_API int mcpwh_json_get_bool(mcpwh_span obj, const char *key, int *out)
{
    mcpwh_span v;
    int r = mcpwh_json_member(obj, key, &v);
    return r != MCPWH_JSON_OK ? r : mcpwh_json_decode_bool(v, out);
}

/* ------------------------------------------------------------------------ */
/* Host helpers                                                              */
/* ------------------------------------------------------------------------ */

/** The name of a status code ("OK", "BAD_POINTER", ..., "NO_MEMORY"). */
MCPWH_API const char *mcpwh_status_name(int32_t status)
{
    switch (status) {
    case MCPWH_OK: return "OK";
    case MCPWH_BAD_POINTER: return "BAD_POINTER";
    case MCPWH_TOO_LARGE: return "TOO_LARGE";
    case MCPWH_INVALID: return "INVALID";
    case MCPWH_UNSUPPORTED: return "UNSUPPORTED";
    case MCPWH_UNAVAILABLE: return "UNAVAILABLE";
    case MCPWH_FAILED: return "FAILED";
    case MCPWH_LIMIT: return "LIMIT";
    case MCPWH_NO_DATA: return "NO_DATA";
    case MCPWH_NO_MEMORY: return "NO_MEMORY";
    case MCPWH_SHORT_READ: return "SHORT_READ";
    case MCPWH_BAD_INPUT: return "BAD_INPUT";
    default: return status > 0 ? "OK" : "UNKNOWN_STATUS";
    }
}

/**
 * Reads the whole input document into a malloc'd, NUL-terminated buffer.
 * On success returns MCPWH_OK, sets *data and (if not NULL) *len; on failure
 * *data is NULL.
 */
MCPWH_API int32_t mcpwh_read_input(char **data, size_t *len)
{
    int32_t n = mcpwh_host_input_len(), got = 0;
    char *buf;
    *data = NULL;
    if (len)
        *len = 0;
    if (n < 0)
        return n;
    buf = (char *)malloc((size_t)n + 1);
    if (buf == NULL)
        return MCPWH_NO_MEMORY;
    if (n > 0)
        got = mcpwh_host_input_read(buf, n);
    if (got != n) {
        free(buf);
        return got < 0 ? got : MCPWH_SHORT_READ;
    }
    buf[n] = '\0';
    *data = buf;
    if (len)
        *len = (size_t)n;
    return MCPWH_OK;
}

/** Sets the output document to data[0..len) (replacing earlier output). */
MCPWH_API int32_t mcpwh_write_output(const void *data, size_t len)
{
    int32_t r;
    if (len > (size_t)INT32_MAX)
        return MCPWH_TOO_LARGE;
    r = mcpwh_host_output_write(len ? data : "", (int32_t)len);
    return r < 0 ? r : MCPWH_OK;
}

/**
 * Logs msg[0..len) at `level` (MCPWH_LOG_*). Invalid UTF-8 is replaced with
 * U+FFFD first (ABI.md lets the host refuse it as MCPWH_INVALID). The host
 * truncates lines over 8 KiB and answers MCPWH_LIMIT after 1,000 lines in one
 * call.
 */
MCPWH_API int32_t mcpwh_log(int level, const char *msg, size_t len)
{
    int32_t r;
    if (len > (size_t)INT32_MAX)
        return MCPWH_TOO_LARGE;
    if (mcpwh_utf8_valid(msg, len, NULL)) {
        r = mcpwh_host_log(level, len ? msg : "", (int32_t)len);
    } else {
        mcpwh_buf b = MCPWH_BUF_INIT;
        if (mcpwh_buf_append_utf8_lossy(&b, msg, len) != 0 || b.len > (size_t)INT32_MAX) {
            mcpwh_buf_free(&b);
            return MCPWH_NO_MEMORY;
        }
        r = mcpwh_host_log(level, b.data, (int32_t)b.len);
        mcpwh_buf_free(&b);
    }
    return r < 0 ? r : MCPWH_OK;
}

/** Logs a printf-style message at `level` (MCPWH_LOG_*). */
MCPWH_API MCPWH_PRINTF(2, 3) int32_t mcpwh_logf(int level, const char *fmt, ...)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    va_list ap;
    int32_t r;
    va_start(ap, fmt);
    r = mcpwh_buf_vprintf(&b, fmt, ap) == 0 ? mcpwh_log(level, b.data, b.len) : MCPWH_NO_MEMORY;
    va_end(ap);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Reports progress (e.g. 3 of 10). total <= 0 means the total is unknown.
 * Both numbers must be finite (the host answers MCPWH_INVALID for NaN or an
 * infinity); MCP clients expect progress to increase from one report to the
 * next. msg may be NULL; it must be valid UTF-8 of at most 1 KiB (else
 * MCPWH_INVALID / MCPWH_TOO_LARGE).
 */
MCPWH_API int32_t mcpwh_progress(double progress, double total, const char *msg)
{
    size_t n = msg ? strlen(msg) : 0;
    int32_t r;
    if (n > (size_t)INT32_MAX)
        return MCPWH_TOO_LARGE;
    r = mcpwh_host_progress(progress, total, n ? msg : "", (int32_t)n);
    return r < 0 ? r : MCPWH_OK;
}

/*
 * Reads the last reply when its length is not known (after MCPWH_FAILED):
 * reply_read always copies from the start, so read into a growing buffer until
 * the host copies less than the buffer holds.
 */
static __attribute__((unused)) int32_t mcpwh__read_reply_unknown(char **out, size_t *out_len)
{
    size_t cap = 256;
    char *buf = NULL;
    for (;;) {
        char *nb = (char *)realloc(buf, cap + 1);
        int32_t got;
        if (nb == NULL) {
            free(buf);
            return MCPWH_NO_MEMORY;
        }
        buf = nb;
        got = mcpwh_host_reply_read(buf, (int32_t)cap);
        if (got < 0) {
            free(buf);
            return got;
        }
        if ((size_t)got < cap) {
            buf[got] = '\0';
            *out = buf;
            *out_len = (size_t)got;
            return MCPWH_OK;
        }
        if (cap >= ((size_t)1 << 24)) { /* far above the 1 MiB reply limit */
            free(buf);
            return MCPWH_TOO_LARGE;
        }
        cap *= 2;
    }
}

/**
 * Sends a request to the host and waits for the reply (ABI.md, "Requests").
 * `params` is a JSON object of params_len bytes (params_len 0 with a NULL
 * params sends "{}").
 *
 * Returns MCPWH_OK with *reply set to the malloc'd, NUL-terminated reply
 * document; or MCPWH_FAILED with *reply set to the {"error": string} document
 * the host reports (or NULL if it could not be read); or another status
 * (MCPWH_UNSUPPORTED for a method the host does not know, MCPWH_UNAVAILABLE,
 * MCPWH_LIMIT, ...) with *reply NULL. *reply_len may be NULL.
 *
 *   char *reply; size_t n;
 *   const char *p = "{\"message\":\"Proceed?\",\"requestedSchema\":"
 *                   "{\"type\":\"object\",\"properties\":{}}}";
 *   if (mcpwh_request("elicit", p, strlen(p), &reply, &n) == MCPWH_OK) {
 *       char *action;
 *       mcpwh_json_get_string(mcpwh_span_of(reply, n), "action", &action, NULL);
 *       ...
 *   }
 */
MCPWH_API int32_t mcpwh_request(const char *method, const char *params, size_t params_len,
                                char **reply, size_t *reply_len)
{
    size_t method_len = strlen(method), dummy;
    int32_t r, got = 0;
    char *buf;
    *reply = NULL;
    if (reply_len == NULL)
        reply_len = &dummy;
    *reply_len = 0;
    if (params == NULL && params_len == 0) {
        params = "{}";
        params_len = 2;
    }
    if (method_len > (size_t)INT32_MAX || params_len > (size_t)INT32_MAX)
        return MCPWH_TOO_LARGE;
    r = mcpwh_host_request(method, (int32_t)method_len, params, (int32_t)params_len);
    if (r == MCPWH_FAILED) {
        mcpwh__read_reply_unknown(reply, reply_len);
        return MCPWH_FAILED;
    }
    if (r < 0)
        return r;
    buf = (char *)malloc((size_t)r + 1);
    if (buf == NULL)
        return MCPWH_NO_MEMORY;
    if (r > 0)
        got = mcpwh_host_reply_read(buf, r);
    if (got != r) {
        free(buf);
        return got < 0 ? got : MCPWH_SHORT_READ;
    }
    buf[r] = '\0';
    *reply = buf;
    *reply_len = (size_t)r;
    return MCPWH_OK;
}

/* ------------------------------------------------------------------------ */
/* HTTP through the host                                                     */
/* ------------------------------------------------------------------------ */

/** Appends data[0..n) to b in standard, padded base64. Returns 0, or -1 on failure. */
MCPWH_API int mcpwh_buf_base64(mcpwh_buf *b, const void *data, size_t n)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *p = (const unsigned char *)data;
    size_t i, full = n / 3 * 3, out;
    char *q;
    if (n > (SIZE_MAX - 4) / 4 * 3)
        return mcpwh_buf_reserve(b, SIZE_MAX); /* fails, marking b */
    out = (n + 2) / 3 * 4;
    if (mcpwh_buf_reserve(b, out) != 0)
        return -1;
    /* Encoded in place: one reservation, no call per group (a call per 3 bytes
       made a 1 MiB checkpoint cost 48 ms). */
    q = b->data + b->len;
    for (i = 0; i < full; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        q[0] = tab[(v >> 18) & 63];
        q[1] = tab[(v >> 12) & 63];
        q[2] = tab[(v >> 6) & 63];
        q[3] = tab[v & 63];
        q += 4;
    }
    if (i < n) {
        uint32_t v = (uint32_t)p[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)p[i + 1] << 8;
        q[0] = tab[(v >> 18) & 63];
        q[1] = tab[(v >> 12) & 63];
        q[2] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
        q[3] = '=';
    }
    b->len += out;
    b->data[b->len] = '\0';
    return 0;
}

/**
 * Decodes standard, padded base64 s[0..n) into out, which must hold n / 4 * 3
 * bytes. Returns the decoded length, or -1 if s is not such base64.
 */
MCPWH_API long mcpwh_base64_decode(const char *s, size_t n, unsigned char *out)
{
    size_t i, o = 0;
    if (n % 4 != 0)
        return -1;
    for (i = 0; i < n; i += 4) {
        uint32_t v = 0;
        int j, pad = 0;
        for (j = 0; j < 4; j++) {
            char c = s[i + j];
            int d;
            if (c >= 'A' && c <= 'Z') d = c - 'A';
            else if (c >= 'a' && c <= 'z') d = c - 'a' + 26;
            else if (c >= '0' && c <= '9') d = c - '0' + 52;
            else if (c == '+') d = 62;
            else if (c == '/') d = 63;
            else if (c == '=' && i + 4 == n && j >= 2) { d = 0; pad++; }
            else return -1;
            if (pad && c != '=')
                return -1;
            v = v << 6 | (uint32_t)d;
        }
        out[o++] = (unsigned char)(v >> 16);
        if (pad < 2)
            out[o++] = (unsigned char)(v >> 8);
        if (pad < 1)
            out[o++] = (unsigned char)v;
    }
    return (long)o;
}

/**
 * Makes an HTTP request through the host (ABI request "http"): only to origins
 * the operator granted the plugin in config.toml ([[plugins.net]]); the host adds
 * the operator's credentials itself and follows redirects, checking each hop.
 * `method` NULL means GET; `headers_json` is a JSON object of string values, or
 * NULL; body[0..body_len) is sent base64-encoded.
 *
 * Returns what mcpwh_request returns: MCPWH_OK with *reply the malloc'd reply
 * {"status": int, "headers": {name: [string]}, "body": base64}; MCPWH_FAILED
 * with *reply {"error": string} saying why the request was refused or failed;
 * MCPWH_NO_MEMORY; or another host status.
 *
 *   char *reply; size_t n;
 *   if (mcpwh_http("GET", "https://api.example.com/v1", NULL, NULL, 0, &reply, &n) == MCPWH_OK) {
 *       int64_t status; char *body64; size_t len;
 *       mcpwh_json_get_int(mcpwh_span_of(reply, n), "status", &status);
 *       mcpwh_json_get_string(mcpwh_span_of(reply, n), "body", &body64, &len);
 *       ... mcpwh_base64_decode(body64, len, out) ...
 *   }
 */
/* mcpwh_http_params_ writes the params of "http" and "http_on_cancel" into b. */
MCPWH_API void mcpwh_http_params_(mcpwh_buf *b, const char *method, const char *url, const char *headers_json,
                                  const void *body, size_t body_len)
{
    mcpwh_buf_puts(b, "{\"method\":");
    mcpwh_buf_json_cstr(b, method ? method : "GET");
    mcpwh_buf_puts(b, ",\"url\":");
    mcpwh_buf_json_cstr(b, url);
    if (headers_json) {
        mcpwh_buf_puts(b, ",\"headers\":");
        mcpwh_buf_puts(b, headers_json);
    }
    mcpwh_buf_puts(b, ",\"body\":\"");
    mcpwh_buf_base64(b, body, body_len);
    mcpwh_buf_puts(b, "\"}");
}

MCPWH_API int32_t mcpwh_http(const char *method, const char *url, const char *headers_json,
                             const void *body, size_t body_len, char **reply, size_t *reply_len)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    int32_t r;
    *reply = NULL;
    if (reply_len)
        *reply_len = 0;
    mcpwh_http_params_(&b, method, url, headers_json, body, body_len);
    if (b.failed) {
        mcpwh_buf_free(&b);
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("http", b.data, b.len, reply, reply_len);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Registers a request for the host to make itself if this call is cancelled
 * (ABI request "http_on_cancel"): the guest's instance is torn down then and never
 * runs again, so this is how it cancels remote work it started, e.g. DELETE on a
 * job. The arguments are those of mcpwh_http; `url` NULL clears the registration.
 * The host checks the request against the policy at once; one request per call,
 * registering again replaces it; a call that ends any other way drops it unsent.
 *
 * Returns MCPWH_OK; MCPWH_FAILED with *reply (malloc'd, may be NULL if reply is
 * NULL) {"error": string} naming the rule that refused it; MCPWH_NO_MEMORY; or
 * another host status (MCPWH_UNSUPPORTED from an older host).
 */
MCPWH_API int32_t mcpwh_http_on_cancel(const char *method, const char *url, const char *headers_json,
                                       const void *body, size_t body_len, char **reply, size_t *reply_len)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    char *ignored = NULL;
    int32_t r;
    if (reply)
        *reply = NULL;
    if (reply_len)
        *reply_len = 0;
    if (url)
        mcpwh_http_params_(&b, method, url, headers_json, body, body_len);
    else
        mcpwh_buf_puts(&b, "null");
    if (b.failed) {
        mcpwh_buf_free(&b);
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("http_on_cancel", b.data, b.len, reply ? reply : &ignored, reply ? reply_len : NULL);
    mcpwh_buf_free(&b);
    free(ignored);
    return r;
}

/*
 * mcpwh_input makes up to 16 requests for input at once (ABI v1.3, "input"):
 * requests_json is a JSON object mapping keys of the guest's choosing (1-64 bytes)
 * to {"method": "elicitation/create" | "sampling/createMessage" | "roots/list",
 * "params": {...}}. On MCP 2026-07-28 the client sees these keys in the
 * InputRequiredResult.
 *
 * Returns what mcpwh_request returns: MCPWH_OK with *reply the malloc'd document
 * {"responses": {key: result, ...}, "unavailable": [key, ...]} (keys whose
 * capability the client did not declare were not asked); MCPWH_UNAVAILABLE if none
 * could be asked; MCPWH_UNSUPPORTED from a host older than ABI v1.3.
 *
 *   const char *q = "{\"where\":{\"method\":\"roots/list\",\"params\":{}}}";
 *   if (mcpwh_input(q, &reply, &n) == MCPWH_OK) { ... }
 */
MCPWH_API int32_t mcpwh_input(const char *requests_json, char **reply, size_t *reply_len)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    int32_t r;
    mcpwh_buf_puts(&b, "{\"requests\":");
    mcpwh_buf_puts(&b, requests_json);
    mcpwh_buf_puts(&b, "}");
    if (b.failed) {
        mcpwh_buf_free(&b);
        *reply = NULL;
        if (reply_len)
            *reply_len = 0;
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("input", b.data, b.len, reply, reply_len);
    mcpwh_buf_free(&b);
    return r;
}

/* ------------------------------------------------------------------------ */
/* Describe and call helpers                                                 */
/* ------------------------------------------------------------------------ */

/**
 * Writes a manifest (a NUL-terminated JSON document, see ABI.md "Manifest").
 * Returns what mcpwh_describe should return: 0 on success, 1 on failure.
 */
MCPWH_API int32_t mcpwh_write_manifest(const char *json)
{
    return mcpwh_write_output(json, strlen(json)) == MCPWH_OK ? 0 : 1;
}

/**
 * Writes a plain-text reason and returns 1: use as `return mcpwh_fail(...)`
 * from describe or call when the call itself cannot be served (as opposed to
 * a tool-level error, which is a result with isError). The host shows the text
 * to the operator (describe) or the user (call).
 */
MCPWH_API MCPWH_PRINTF(1, 2) int32_t mcpwh_fail(const char *fmt, ...)
{
    mcpwh_buf b = MCPWH_BUF_INIT, clean = MCPWH_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    if (mcpwh_buf_vprintf(&b, fmt, ap) == 0 && mcpwh_buf_append_utf8_lossy(&clean, b.data, b.len) == 0)
        mcpwh_write_output(clean.data, clean.len);
    else
        mcpwh_write_output("out of memory", 13);
    va_end(ap);
    mcpwh_buf_free(&b);
    mcpwh_buf_free(&clean);
    return 1;
}

/**
 * The parsed call input: a tool call {"tool": ..., "arguments": {...}}, or (ABI
 * v1.1, for plugins that declare resources, prompts or completions) a method
 * {"method": "resources/read" | "prompts/get" | "completion/complete",
 * "params": {...}}. Exactly one of tool and method is set.
 */
typedef struct mcpwh_call_input {
    char *raw;        /* the whole input document (malloc'd, NUL-terminated) */
    size_t raw_len;
    char *tool;       /* the tool name, decoded (malloc'd, NUL-terminated), or NULL */
    size_t tool_len;
    mcpwh_span args;  /* the "arguments" object: a span into raw ("{}" if absent) */
    char *method;     /* the method name, decoded (malloc'd, NUL-terminated), or NULL */
    size_t method_len;
    mcpwh_span params; /* the "params" object: a span into raw ("{}" if absent) */
} mcpwh_call_input;

/** Frees what mcpwh_read_call allocated. Safe to call twice. */
MCPWH_API void mcpwh_call_input_free(mcpwh_call_input *in)
{
    free(in->raw);
    free(in->tool);
    free(in->method);
    memset(in, 0, sizeof *in);
}

/**
 * Reads and parses the call input. Returns MCPWH_OK; a host status;
 * MCPWH_NO_MEMORY; or MCPWH_BAD_INPUT if the document is not a JSON object
 * with a string "tool" (and an object "arguments") or a string "method" (and
 * an object "params"). Free with mcpwh_call_input_free (also after a failure).
 */
MCPWH_API int32_t mcpwh_read_call(mcpwh_call_input *in)
{
    mcpwh_json_iter it;
    mcpwh_span k, v, tool = { NULL, 0 }, method = { NULL, 0 };
    int r, have_args = 0, have_params = 0;
    int32_t rc;
    memset(in, 0, sizeof *in);
    in->args = mcpwh_span_of("{}", 2);
    in->params = mcpwh_span_of("{}", 2);
    rc = mcpwh_read_input(&in->raw, &in->raw_len);
    if (rc != MCPWH_OK)
        return rc;
    if (mcpwh_json_object_begin(&it, mcpwh_span_of(in->raw, in->raw_len)) != MCPWH_JSON_OK)
        return MCPWH_BAD_INPUT;
    while ((r = mcpwh_json_object_next(&it, &k, &v)) == 1) {
        if (mcpwh_json_key_is(k, "tool")) {
            tool = v;
        } else if (mcpwh_json_key_is(k, "arguments")) {
            in->args = v;
            have_args = 1;
        } else if (mcpwh_json_key_is(k, "method")) {
            method = v;
        } else if (mcpwh_json_key_is(k, "params")) {
            in->params = v;
            have_params = 1;
        }
    }
    if (r < 0 || (tool.ptr == NULL) == (method.ptr == NULL))
        return MCPWH_BAD_INPUT;
    if (have_args && mcpwh_json_type(in->args) != MCPWH_JSON_T_OBJECT)
        return MCPWH_BAD_INPUT;
    if (have_params && mcpwh_json_type(in->params) != MCPWH_JSON_T_OBJECT)
        return MCPWH_BAD_INPUT;
    if (method.ptr != NULL) {
        r = mcpwh_json_decode_string(method, &in->method, &in->method_len);
        if (r == MCPWH_JSON_NO_MEMORY)
            return MCPWH_NO_MEMORY;
        return r == MCPWH_JSON_OK ? MCPWH_OK : MCPWH_BAD_INPUT;
    }
    r = mcpwh_json_decode_string(tool, &in->tool, &in->tool_len);
    if (r == MCPWH_JSON_NO_MEMORY)
        return MCPWH_NO_MEMORY;
    return r == MCPWH_JSON_OK ? MCPWH_OK : MCPWH_BAD_INPUT;
}

/** 1 if the call is for tool `name`. */
MCPWH_API int mcpwh_call_is(const mcpwh_call_input *in, const char *name)
{
    size_t n = strlen(name);
    return in->tool != NULL && in->tool_len == n && memcmp(in->tool, name, n) == 0;
}

/** 1 if the call is the method `name` (ABI v1.1), e.g. "resources/read". */
MCPWH_API int mcpwh_call_is_method(const mcpwh_call_input *in, const char *name)
{
    size_t n = strlen(name);
    return in->method != NULL && in->method_len == n && memcmp(in->method, name, n) == 0;
}

/**
 * Tells clients subscribed to `uri` that it changed (ABI v1.1 request
 * resource_updated). The URI must be one of the plugin's resources or match one
 * of its templates. Returns MCPWH_OK, MCPWH_FAILED (not the plugin's resource),
 * MCPWH_NO_MEMORY or another host status.
 */
MCPWH_API int32_t mcpwh_resource_updated(const char *uri)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    char *reply = NULL;
    int32_t r;
    mcpwh_buf_puts(&b, "{\"uri\":");
    mcpwh_buf_json_cstr(&b, uri);
    mcpwh_buf_putc(&b, '}');
    if (b.failed) {
        mcpwh_buf_free(&b);
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("resource_updated", b.data, b.len, &reply, NULL);
    free(reply);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Appends text[0..len) (lines; a last one without '\n' gets one) to the call's
 * task log (ABI v1.4 request task_log), which the task's owner reads as the
 * resource mcp-wasmhost://tasks/{taskId}/log while it runs. Returns MCPWH_OK,
 * MCPWH_FAILED (not a task, or not UTF-8 text), MCPWH_NO_MEMORY or another host
 * status.
 */
MCPWH_API int32_t mcpwh_task_log(const char *text, size_t len)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    char *reply = NULL;
    int32_t r;
    mcpwh_buf_puts(&b, "{\"text\":");
    mcpwh_buf_json_string(&b, text, len);
    mcpwh_buf_putc(&b, '}');
    if (b.failed) {
        mcpwh_buf_free(&b);
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("task_log", b.data, b.len, &reply, NULL);
    free(reply);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Saves data[0..len) (at most 1 MiB) as the checkpoint a resumed task starts from
 * (ABI v1.4 request checkpoint_save); the tool must declare
 * "execution": {"resumable": true}. Returns MCPWH_OK, MCPWH_FAILED (with the
 * reason in the reply), MCPWH_TOO_LARGE, MCPWH_NO_MEMORY or another host status.
 */
MCPWH_API int32_t mcpwh_checkpoint_save(const void *data, size_t len)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    char *reply = NULL;
    int32_t r;
    mcpwh_buf_puts(&b, "{\"data\":\"");
    mcpwh_buf_base64(&b, data, len);
    mcpwh_buf_puts(&b, "\"}");
    if (b.failed) {
        mcpwh_buf_free(&b);
        return MCPWH_NO_MEMORY;
    }
    r = mcpwh_request("checkpoint_save", b.data, b.len, &reply, NULL);
    free(reply);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Reads what the call starts from (ABI v1.4 request checkpoint_load): the last
 * checkpoint its task saved before its server or worker stopped, in *data (malloc'd,
 * the caller frees it; NULL with *len 0 on a first run), and in *resumes how many
 * times the task has been resumed. Returns MCPWH_OK or a host status.
 */
MCPWH_API int32_t mcpwh_checkpoint_load(unsigned char **data, size_t *len, int *resumes)
{
    char *reply = NULL, *b64 = NULL;
    size_t n = 0, b64_len = 0;
    int64_t count = 0;
    mcpwh_span doc, v;
    int32_t r;
    *data = NULL;
    *len = 0;
    *resumes = 0;
    r = mcpwh_request("checkpoint_load", "{}", 2, &reply, &n);
    if (r != MCPWH_OK)
        return r;
    doc = mcpwh_span_of(reply, n);
    if (mcpwh_json_get_int(doc, "resumes", &count) == MCPWH_JSON_OK)
        *resumes = (int)count;
    if (mcpwh_json_member(doc, "data", &v) == MCPWH_JSON_OK && mcpwh_json_type(v) == MCPWH_JSON_T_STRING) {
        if (mcpwh_json_decode_string(v, &b64, &b64_len) != MCPWH_JSON_OK) {
            free(reply);
            return MCPWH_NO_MEMORY;
        }
        *data = (unsigned char *)malloc(b64_len / 4 * 3 + 1);
        if (*data == NULL) {
            free(b64);
            free(reply);
            return MCPWH_NO_MEMORY;
        }
        long got = mcpwh_base64_decode(b64, b64_len, *data);
        free(b64);
        if (got < 0) {
            free(*data);
            *data = NULL;
            free(reply);
            return MCPWH_INVALID;
        }
        *len = (size_t)got;
    }
    free(reply);
    return MCPWH_OK;
}

/**
 * Appends a CallToolResult with one text content item to b:
 *
 *   {"content":[{"type":"text","text":TEXT}],"structuredContent":S,"isError":true}
 *
 * text[0..text_len) is escaped (invalid UTF-8 becomes U+FFFD).
 * `structured` is raw JSON copied as is; it must be a JSON object, or NULL to
 * omit structuredContent. "isError" is written only when is_error is non-zero.
 * Returns MCPWH_OK, MCPWH_INVALID (structured is not a JSON object) or
 * MCPWH_NO_MEMORY.
 */
MCPWH_API int32_t mcpwh_buf_tool_result(mcpwh_buf *b, const char *text, size_t text_len,
                                        const char *structured, size_t structured_len, int is_error)
{
    if (structured != NULL) {
        mcpwh_span s = mcpwh_span_of(structured, structured_len);
        if (mcpwh_json_type(s) != MCPWH_JSON_T_OBJECT || mcpwh_json_validate(s) != MCPWH_JSON_OK)
            return MCPWH_INVALID;
    }
    mcpwh_buf_puts(b, "{\"content\":[{\"type\":\"text\",\"text\":");
    mcpwh_buf_json_string(b, text, text_len);
    mcpwh_buf_puts(b, "}]");
    if (structured != NULL) {
        mcpwh_buf_puts(b, ",\"structuredContent\":");
        mcpwh_buf_append(b, structured, structured_len);
    }
    if (is_error)
        mcpwh_buf_puts(b, ",\"isError\":true");
    mcpwh_buf_putc(b, '}');
    return b->failed ? MCPWH_NO_MEMORY : MCPWH_OK;
}

/* Writes a fixed error result; the text must need no JSON escaping. */
static __attribute__((unused)) int32_t mcpwh__write_error_literal(const char *text)
{
    char tmp[320];
    int n = snprintf(tmp, sizeof tmp, "{\"content\":[{\"type\":\"text\",\"text\":\"%s\"}],\"isError\":true}", text);
    if (n < 0 || (size_t)n >= sizeof tmp)
        return MCPWH_TOO_LARGE;
    return mcpwh_write_output(tmp, (size_t)n);
}

/**
 * Writes the result document in b (built with mcpwh_buf_tool_result or by
 * hand) as the call's output.
 *
 * If b ran out of memory, or the host refuses it as larger than the plugin's
 * max_output_bytes, a short isError result explaining that is written instead
 * (and a warning logged), so the model still gets an answer.
 *
 * Returns MCPWH_OK when a valid result (b's or the replacement) was written,
 * else the host's status; so mcpwh_call can end with
 *     return mcpwh_write_result(&b) == MCPWH_OK ? 0 : 1;
 */
MCPWH_API int32_t mcpwh_write_result(const mcpwh_buf *b)
{
    int32_t r;
    char msg[200];
    if (b->failed || b->data == NULL) {
        mcpwh_logf(MCPWH_LOG_WARNING, "mcpwh: out of memory while building the result");
        return mcpwh__write_error_literal("The tool ran out of memory while building its result.");
    }
    r = mcpwh_write_output(b->data, b->len);
    if (r != MCPWH_TOO_LARGE)
        return r;
    snprintf(msg, sizeof msg,
             "The result is too large: %lu bytes exceed the plugin's output limit.",
             (unsigned long)b->len);
    mcpwh_logf(MCPWH_LOG_WARNING, "mcpwh: result of %lu bytes refused as too large", (unsigned long)b->len);
    return mcpwh__write_error_literal(msg);
}

/**
 * Builds and writes a CallToolResult with one text item (see
 * mcpwh_buf_tool_result and mcpwh_write_result). Returns MCPWH_OK when a
 * valid result was written.
 */
MCPWH_API int32_t mcpwh_result_text(const char *text, size_t text_len,
                                    const char *structured, size_t structured_len, int is_error)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    int32_t r = mcpwh_buf_tool_result(&b, text, text_len, structured, structured_len, is_error);
    if (r == MCPWH_INVALID) {
        mcpwh_buf_free(&b);
        mcpwh_logf(MCPWH_LOG_ERROR, "mcpwh: structuredContent is not a JSON object");
        return mcpwh__write_error_literal("The tool produced invalid structured content.");
    }
    r = mcpwh_write_result(&b);
    mcpwh_buf_free(&b);
    return r;
}

/**
 * Writes a tool-level error: a CallToolResult with isError true and a
 * printf-formatted text. Returns MCPWH_OK when it was written.
 */
MCPWH_API MCPWH_PRINTF(1, 2) int32_t mcpwh_result_errorf(const char *fmt, ...)
{
    mcpwh_buf text = MCPWH_BUF_INIT;
    va_list ap;
    int32_t r;
    va_start(ap, fmt);
    if (mcpwh_buf_vprintf(&text, fmt, ap) == 0)
        r = mcpwh_result_text(text.data, text.len, NULL, 0, 1);
    else
        r = mcpwh__write_error_literal("The tool failed and ran out of memory describing why.");
    va_end(ap);
    mcpwh_buf_free(&text);
    return r;
}

#ifdef __cplusplus
}
#endif

#endif /* MCPWH_H */
