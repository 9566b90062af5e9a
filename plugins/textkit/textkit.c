/*
 * textkit - everyday text tools for mcp-wasmhost: statistics, SHA-256, base64.
 *
 * Build (from the repository root; the output is reproducible byte for byte):
 *
 *   clang-14 --target=wasm32-wasi --sysroot=/usr -O2 -mexec-model=reactor -Wl,--strip-all -Wl,-z,stack-size=32768 -Isdk-guest/c -o plugins/textkit/textkit.wasm plugins/textkit/textkit.c
 *
 * Tools (all read-only, deterministic, no I/O):
 *   stats          {text}  -> bytes, characters (code points), words, lines
 *   sha256         {text}  -> lowercase hex SHA-256 of the text's UTF-8 bytes
 *   base64_encode  {text}  -> standard base64 with padding
 *   base64_decode  {data}  -> the decoded text (must be valid UTF-8)
 *   ping           {}      -> "pong" (the cheapest possible call)
 *
 * Written against the guest ABI v1 (docs/ABI.md) with sdk-guest/c/mcpwh.h.
 */
#include "mcpwh.h"

/* ------------------------------------------------------------------------ */
/* Manifest                                                                  */
/* ------------------------------------------------------------------------ */

#define TK_ANNOTATIONS "\"annotations\":{\"readOnlyHint\":true,\"idempotentHint\":true,\"openWorldHint\":false}"

#define TK_TEXT_INPUT(what)                                                               \
    "\"inputSchema\":{\"type\":\"object\","                                              \
    "\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"" what "\"}},"      \
    "\"required\":[\"text\"],\"additionalProperties\":false}"

static const char TK_TOOL_STATS[] =
    "{\"name\":\"stats\",\"title\":\"Text statistics\","
    "\"description\":\"Counts the bytes, characters, words and lines of a text. "
    "Bytes are those of its UTF-8 encoding; characters are Unicode code points; "
    "words are maximal runs of characters that are not whitespace (Unicode White_Space); "
    "lines are the number of line feeds (U+000A), plus one if the text is not empty "
    "and does not end with a line feed.\","
    TK_TEXT_INPUT("The text to measure.") ","
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"bytes\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Length of the UTF-8 encoding in bytes.\"},"
    "\"chars\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of Unicode code points.\"},"
    "\"words\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of whitespace-separated words.\"},"
    "\"lines\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"Number of lines.\"}},"
    "\"required\":[\"bytes\",\"chars\",\"words\",\"lines\"],\"additionalProperties\":false},"
    TK_ANNOTATIONS ",\"execution\":{\"taskSupport\":\"forbidden\"}}";

static const char TK_TOOL_SHA256[] =
    "{\"name\":\"sha256\",\"title\":\"SHA-256 digest\","
    "\"description\":\"Computes the SHA-256 digest (FIPS 180-4) of the UTF-8 bytes of a text "
    "and returns it as 64 lowercase hexadecimal digits.\","
    TK_TEXT_INPUT("The text to hash.") ","
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{"
    "\"sha256\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{64}$\","
    "\"description\":\"The digest as 64 lowercase hexadecimal digits.\"}},"
    "\"required\":[\"sha256\"],\"additionalProperties\":false},"
    TK_ANNOTATIONS ",\"execution\":{\"taskSupport\":\"forbidden\"}}";

static const char TK_TOOL_B64ENC[] =
    "{\"name\":\"base64_encode\",\"title\":\"Base64 encode\","
    "\"description\":\"Encodes the UTF-8 bytes of a text as base64 "
    "(RFC 4648 section 4: alphabet A-Z a-z 0-9 + /, padded with =).\","
    TK_TEXT_INPUT("The text to encode.") ","
    TK_ANNOTATIONS ",\"execution\":{\"taskSupport\":\"forbidden\"}}";

static const char TK_TOOL_B64DEC[] =
    "{\"name\":\"base64_decode\",\"title\":\"Base64 decode\","
    "\"description\":\"Decodes base64 (RFC 4648 section 4, standard alphabet A-Z a-z 0-9 + /) "
    "and returns the bytes as text. Whitespace such as line breaks is ignored and padding (=) "
    "is optional. Fails if the input is not valid base64 or if the decoded bytes are not "
    "valid UTF-8, since binary data cannot be returned as text.\","
    "\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"data\":{\"type\":\"string\",\"description\":\"The base64 data to decode.\"}},"
    "\"required\":[\"data\"],\"additionalProperties\":false},"
    TK_ANNOTATIONS ",\"execution\":{\"taskSupport\":\"forbidden\"}}";

static const char TK_TOOL_PING[] =
    "{\"name\":\"ping\",\"title\":\"Ping\","
    "\"description\":\"Answers with the text pong and does nothing else: checks that the "
    "plugin responds and measures the cost of a call.\","
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false},"
    TK_ANNOTATIONS ",\"execution\":{\"taskSupport\":\"optional\"}}";

static int32_t tk_describe(void)
{
    static const char *const tools[] = {
        TK_TOOL_STATS, TK_TOOL_SHA256, TK_TOOL_B64ENC, TK_TOOL_B64DEC, TK_TOOL_PING,
    };
    mcpwh_buf b = MCPWH_BUF_INIT;
    size_t i;
    int32_t rc;
    mcpwh_buf_puts(&b, "{\"tools\":[");
    for (i = 0; i < sizeof tools / sizeof tools[0]; i++) {
        if (i > 0)
            mcpwh_buf_putc(&b, ',');
        mcpwh_buf_puts(&b, tools[i]);
    }
    mcpwh_buf_puts(&b, "]}");
    if (b.failed) {
        mcpwh_buf_free(&b);
        return mcpwh_fail("textkit: out of memory while writing the manifest");
    }
    rc = mcpwh_write_output(b.data, b.len);
    mcpwh_buf_free(&b);
    return rc == MCPWH_OK ? 0 : mcpwh_fail("textkit: the host refused the manifest (%s)", mcpwh_status_name(rc));
}

/* ------------------------------------------------------------------------ */
/* Argument helpers                                                          */
/* ------------------------------------------------------------------------ */

/* Turns the status of writing a result into mcpwh_call's return value. */
static int32_t tk_done(int32_t rc)
{
    return rc == MCPWH_OK ? 0 : 1;
}

static const char *tk_a_type(int type)
{
    switch (type) {
    case MCPWH_JSON_T_NULL: return "null";
    case MCPWH_JSON_T_BOOL: return "a boolean";
    case MCPWH_JSON_T_NUMBER: return "a number";
    case MCPWH_JSON_T_ARRAY: return "an array";
    case MCPWH_JSON_T_OBJECT: return "an object";
    default: return "not valid JSON";
    }
}

/*
 * Reads the required string argument `name`. Returns 1 with *out (malloc'd)
 * and *len set; or 0 after writing an isError result into *rc.
 */
static int tk_arg_string(mcpwh_span args, const char *name, char **out, size_t *len, int32_t *rc)
{
    mcpwh_span v;
    int r = mcpwh_json_member(args, name, &v);
    *out = NULL;
    if (r == MCPWH_JSON_MISSING) {
        *rc = mcpwh_result_errorf("Missing required argument \"%s\" (a string).", name);
        return 0;
    }
    if (r != MCPWH_JSON_OK) {
        *rc = mcpwh_result_errorf("The arguments are not a valid JSON object.");
        return 0;
    }
    if (mcpwh_json_type(v) != MCPWH_JSON_T_STRING) {
        *rc = mcpwh_result_errorf("Argument \"%s\" must be a string, not %s.", name,
                                  tk_a_type(mcpwh_json_type(v)));
        return 0;
    }
    r = mcpwh_json_decode_string(v, out, len);
    if (r != MCPWH_JSON_OK) {
        *rc = mcpwh_result_errorf("Argument \"%s\" could not be decoded: %s.", name, mcpwh_json_strerror(r));
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* stats                                                                     */
/* ------------------------------------------------------------------------ */

/* Unicode White_Space (the same set as Go's unicode.IsSpace). */
static int tk_is_space(uint32_t c)
{
    if (c < 0x80)
        return c == ' ' || (c >= 0x09 && c <= 0x0D);
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

static const char *tk_plural(size_t n)
{
    return n == 1 ? "" : "s";
}

static int32_t tk_stats(mcpwh_span args)
{
    char *text;
    size_t n, i = 0, chars = 0, words = 0, lines = 0;
    int in_word = 0;
    int32_t rc;
    mcpwh_buf msg = MCPWH_BUF_INIT, sc = MCPWH_BUF_INIT;
    const unsigned char *p;

    if (!tk_arg_string(args, "text", &text, &n, &rc))
        return tk_done(rc);
    p = (const unsigned char *)text;
    while (i < n) {
        uint32_t cp = p[i];
        size_t k = 1;
        if (cp >= 0x80) {
            k = mcpwh_utf8_decode(p + i, n - i, &cp);
            if (k == 0) { /* cannot happen: decoded JSON strings are valid UTF-8 */
                k = 1;
                cp = 0xFFFD;
            }
        } else if (cp == '\n') {
            lines++;
        }
        chars++;
        if (tk_is_space(cp)) {
            in_word = 0;
        } else if (!in_word) {
            in_word = 1;
            words++;
        }
        i += k;
    }
    if (n > 0 && p[n - 1] != '\n')
        lines++;
    free(text);

    mcpwh_buf_printf(&msg, "%lu line%s, %lu word%s, %lu character%s, %lu byte%s",
                     (unsigned long)lines, tk_plural(lines), (unsigned long)words, tk_plural(words),
                     (unsigned long)chars, tk_plural(chars), (unsigned long)n, tk_plural(n));
    mcpwh_buf_printf(&sc, "{\"bytes\":%lu,\"chars\":%lu,\"words\":%lu,\"lines\":%lu}",
                     (unsigned long)n, (unsigned long)chars, (unsigned long)words, (unsigned long)lines);
    if (msg.failed || sc.failed)
        rc = mcpwh_result_errorf("Out of memory.");
    else
        rc = mcpwh_result_text(msg.data, msg.len, sc.data, sc.len, 0);
    mcpwh_buf_free(&msg);
    mcpwh_buf_free(&sc);
    return tk_done(rc);
}

/* ------------------------------------------------------------------------ */
/* sha256 (FIPS 180-4)                                                       */
/* ------------------------------------------------------------------------ */

typedef struct {
    uint32_t h[8];
    uint64_t total;          /* bytes hashed so far */
    unsigned char block[64]; /* pending partial block */
    size_t fill;             /* bytes in block */
} tk_sha256;

static const uint32_t TK_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define TK_ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void tk_sha256_block(uint32_t h[8], const unsigned char *p)
{
    uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
    int i;
    for (i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               (uint32_t)p[4 * i + 3];
    for (i = 16; i < 64; i++) {
        uint32_t s0 = TK_ROTR(w[i - 15], 7) ^ TK_ROTR(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = TK_ROTR(w[i - 2], 17) ^ TK_ROTR(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3];
    e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (i = 0; i < 64; i++) {
        t1 = hh + (TK_ROTR(e, 6) ^ TK_ROTR(e, 11) ^ TK_ROTR(e, 25)) + ((e & f) ^ (~e & g)) + TK_K[i] + w[i];
        t2 = (TK_ROTR(a, 2) ^ TK_ROTR(a, 13) ^ TK_ROTR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

static void tk_sha256_init(tk_sha256 *s)
{
    static const uint32_t iv[8] = {
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
    };
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->fill = 0;
}

static void tk_sha256_update(tk_sha256 *s, const unsigned char *p, size_t n)
{
    s->total += n;
    if (s->fill > 0) {
        size_t k = 64 - s->fill < n ? 64 - s->fill : n;
        memcpy(s->block + s->fill, p, k);
        s->fill += k;
        p += k;
        n -= k;
        if (s->fill < 64)
            return;
        tk_sha256_block(s->h, s->block);
        s->fill = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
        tk_sha256_block(s->h, p);
    if (n > 0) {
        memcpy(s->block, p, n);
        s->fill = n;
    }
}

static void tk_sha256_final(tk_sha256 *s, unsigned char out[32])
{
    uint64_t bits = s->total * 8;
    int i;
    s->block[s->fill++] = 0x80;
    if (s->fill > 56) {
        memset(s->block + s->fill, 0, 64 - s->fill);
        tk_sha256_block(s->h, s->block);
        s->fill = 0;
    }
    memset(s->block + s->fill, 0, 56 - s->fill);
    for (i = 0; i < 8; i++)
        s->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
    tk_sha256_block(s->h, s->block);
    for (i = 0; i < 32; i++)
        out[i] = (unsigned char)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}

static int32_t tk_sha256_tool(mcpwh_span args)
{
    static const char hex[] = "0123456789abcdef";
    char *text, digest_hex[65], sc[80];
    unsigned char digest[32];
    size_t n;
    int i;
    int32_t rc;
    tk_sha256 s;

    if (!tk_arg_string(args, "text", &text, &n, &rc))
        return tk_done(rc);
    tk_sha256_init(&s);
    tk_sha256_update(&s, (const unsigned char *)text, n);
    tk_sha256_final(&s, digest);
    free(text);
    for (i = 0; i < 32; i++) {
        digest_hex[2 * i] = hex[digest[i] >> 4];
        digest_hex[2 * i + 1] = hex[digest[i] & 0xF];
    }
    digest_hex[64] = '\0';
    snprintf(sc, sizeof sc, "{\"sha256\":\"%s\"}", digest_hex);
    return tk_done(mcpwh_result_text(digest_hex, 64, sc, strlen(sc), 0));
}

/* ------------------------------------------------------------------------ */
/* base64 (RFC 4648 section 4)                                               */
/* ------------------------------------------------------------------------ */

static const char TK_B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int32_t tk_base64_encode(mcpwh_span args)
{
    char *text, *out;
    size_t n, i, o = 0;
    const unsigned char *p;
    int32_t rc;

    if (!tk_arg_string(args, "text", &text, &n, &rc))
        return tk_done(rc);
    if (n / 3 >= (SIZE_MAX - 1) / 4 - 1 || (out = (char *)malloc((n + 2) / 3 * 4 + 1)) == NULL) {
        free(text);
        return tk_done(mcpwh_result_errorf("Out of memory: the text (%lu bytes) is too long to encode.",
                                           (unsigned long)n));
    }
    p = (const unsigned char *)text;
    for (i = 0; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = TK_B64[v >> 18];
        out[o++] = TK_B64[(v >> 12) & 63];
        out[o++] = TK_B64[(v >> 6) & 63];
        out[o++] = TK_B64[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = TK_B64[v >> 18];
        out[o++] = TK_B64[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = TK_B64[v >> 18];
        out[o++] = TK_B64[(v >> 12) & 63];
        out[o++] = TK_B64[(v >> 6) & 63];
        out[o++] = '=';
    }
    out[o] = '\0';
    free(text);
    rc = mcpwh_result_text(out, o, NULL, 0, 0);
    free(out);
    return tk_done(rc);
}

static int tk_b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int tk_b64_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* 1-based character (code point) position of byte offset `off` in s. */
static size_t tk_char_pos(const char *s, size_t off)
{
    size_t i, pos = 1;
    for (i = 0; i < off; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            pos++;
    return pos;
}

/* Describes the character at s[off] for an error message: 'x' or U+XXXX. */
static void tk_describe_char(const char *s, size_t n, size_t off, char out[16])
{
    uint32_t cp = (unsigned char)s[off];
    if (cp > 0x20 && cp < 0x7F && cp != '\'') {
        snprintf(out, 16, "'%c'", (char)cp);
        return;
    }
    if (cp >= 0x80 && mcpwh_utf8_decode((const unsigned char *)s + off, n - off, &cp) == 0)
        cp = 0xFFFD;
    snprintf(out, 16, "U+%04lX", (unsigned long)cp);
}

static int32_t tk_base64_decode(mcpwh_span args)
{
    char *data, what[16];
    size_t n, i, o = 0, pad = 0, bad;
    unsigned char *bytes;
    uint32_t acc = 0;
    int nsym = 0;
    int32_t rc;

    if (!tk_arg_string(args, "data", &data, &n, &rc))
        return tk_done(rc);
    bytes = (unsigned char *)malloc(n / 4 * 3 + 3);
    if (bytes == NULL) {
        rc = mcpwh_result_errorf("Out of memory: the data (%lu bytes) is too long to decode.", (unsigned long)n);
        goto out;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)data[i];
        int v;
        if (tk_b64_space(c))
            continue;
        if (c == '=') {
            pad++;
            continue;
        }
        v = tk_b64_value(c);
        if (v < 0 || pad > 0) {
            tk_describe_char(data, n, i, what);
            rc = mcpwh_result_errorf(
                "Invalid base64: unexpected character %s at position %lu%s.", what,
                (unsigned long)tk_char_pos(data, i),
                v >= 0 ? " (after the '=' padding, which may only end the data)"
                : (c == '-' || c == '_') ? " ('-' and '_' belong to the URL-safe base64url alphabet, "
                                           "which this tool does not decode)"
                                         : "");
            goto out;
        }
        acc = acc << 6 | (uint32_t)v;
        if (++nsym == 4) {
            bytes[o++] = (unsigned char)(acc >> 16);
            bytes[o++] = (unsigned char)(acc >> 8);
            bytes[o++] = (unsigned char)acc;
            acc = 0;
            nsym = 0;
        }
    }
    switch (nsym) {
    case 0:
        if (pad > 0) {
            rc = mcpwh_result_errorf("Invalid base64: unexpected '=' padding (the data before it is "
                                     "already complete).");
            goto out;
        }
        break;
    case 1:
        rc = mcpwh_result_errorf("Invalid base64: the data ends with a single leftover character "
                                 "(a base64 group needs at least 2); it is probably truncated.");
        goto out;
    case 2:
        if (pad != 0 && pad != 2) {
            rc = mcpwh_result_errorf("Invalid base64: the last group needs 2 '=' padding characters, "
                                     "found %lu.", (unsigned long)pad);
            goto out;
        }
        bytes[o++] = (unsigned char)(acc >> 4);
        break;
    default: /* 3 */
        if (pad != 0 && pad != 1) {
            rc = mcpwh_result_errorf("Invalid base64: the last group needs 1 '=' padding character, "
                                     "found %lu.", (unsigned long)pad);
            goto out;
        }
        bytes[o++] = (unsigned char)(acc >> 10);
        bytes[o++] = (unsigned char)(acc >> 2);
        break;
    }
    if (!mcpwh_utf8_valid((const char *)bytes, o, &bad)) {
        rc = mcpwh_result_errorf("The decoded data (%lu byte%s) is not valid UTF-8 text: byte 0x%02X at "
                                 "offset %lu starts no valid UTF-8 sequence. This tool only returns text; "
                                 "the data is probably binary.",
                                 (unsigned long)o, o == 1 ? "" : "s", bytes[bad], (unsigned long)bad);
        goto out;
    }
    rc = mcpwh_result_text((const char *)bytes, o, NULL, 0, 0);
out:
    free(bytes);
    free(data);
    return tk_done(rc);
}

/* ------------------------------------------------------------------------ */
/* ping and dispatch                                                         */
/* ------------------------------------------------------------------------ */

static int32_t tk_ping(mcpwh_span args)
{
    static const char result[] = "{\"content\":[{\"type\":\"text\",\"text\":\"pong\"}]}";
    (void)args;
    return mcpwh_write_output(result, sizeof result - 1) == MCPWH_OK ? 0 : 1;
}

typedef int32_t (*tk_tool_fn)(mcpwh_span args);

static const struct {
    const char *name;
    const char *arg; /* the one argument it takes, or NULL */
    tk_tool_fn fn;
} TK_TOOLS[] = {
    { "stats", "text", tk_stats },
    { "sha256", "text", tk_sha256_tool },
    { "base64_encode", "text", tk_base64_encode },
    { "base64_decode", "data", tk_base64_decode },
    { "ping", NULL, tk_ping },
};

#define TK_TOOL_LIST "stats, sha256, base64_encode, base64_decode, ping"

/*
 * The host validates arguments against inputSchema (additionalProperties is
 * false), so this only triggers if that check is bypassed; it keeps a typo in
 * an argument name from being silently ignored.
 */
static int tk_check_args(mcpwh_span args, const char *tool, const char *allowed, int32_t *rc)
{
    mcpwh_json_iter it;
    mcpwh_span k, v;
    int r;
    if (mcpwh_json_object_begin(&it, args) != MCPWH_JSON_OK) {
        *rc = mcpwh_result_errorf("The arguments must be a JSON object.");
        return 0;
    }
    while ((r = mcpwh_json_object_next(&it, &k, &v)) == 1) {
        char *name;
        size_t len;
        if (allowed != NULL && mcpwh_json_key_is(k, allowed))
            continue;
        if (mcpwh_json_decode_string(k, &name, &len) != MCPWH_JSON_OK) {
            *rc = mcpwh_result_errorf("Out of memory.");
            return 0;
        }
        if (allowed != NULL)
            *rc = mcpwh_result_errorf("Unknown argument \"%.*s\" for tool \"%s\"; it takes only \"%s\".",
                                      len > 64 ? 64 : (int)len, name, tool, allowed);
        else
            *rc = mcpwh_result_errorf("Unknown argument \"%.*s\" for tool \"%s\"; it takes no arguments.",
                                      len > 64 ? 64 : (int)len, name, tool);
        free(name);
        return 0;
    }
    if (r < 0) {
        *rc = mcpwh_result_errorf("The arguments are not a valid JSON object.");
        return 0;
    }
    return 1;
}

static int32_t tk_call(void)
{
    mcpwh_call_input in;
    int32_t rc;
    size_t i;

    rc = mcpwh_read_call(&in);
    if (rc != MCPWH_OK) {
        mcpwh_call_input_free(&in);
        return mcpwh_fail("textkit: cannot read the call input (%s)", mcpwh_status_name(rc));
    }
    for (i = 0; i < sizeof TK_TOOLS / sizeof TK_TOOLS[0]; i++) {
        if (mcpwh_call_is(&in, TK_TOOLS[i].name)) {
            if (!tk_check_args(in.args, TK_TOOLS[i].name, TK_TOOLS[i].arg, &rc))
                rc = tk_done(rc);
            else
                rc = TK_TOOLS[i].fn(in.args);
            mcpwh_call_input_free(&in);
            return rc;
        }
    }
    rc = mcpwh_result_errorf("Unknown tool \"%.*s\"; textkit provides: " TK_TOOL_LIST ".",
                             in.tool_len > 64 ? 64 : (int)in.tool_len, in.tool);
    mcpwh_call_input_free(&in);
    return tk_done(rc);
}

MCPWH_PLUGIN(tk_describe, tk_call)
