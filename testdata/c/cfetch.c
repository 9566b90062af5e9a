/*
 * cfetch - a C test guest for the "http" request: "fetch" makes the request its
 * arguments describe ({"url", "method"?, "body"?}) with mcpwh_http and returns
 * "<status> <body>", or "error: <why>" when the host refused or failed it.
 */
#include "mcpwh.h"

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"fetch\",\"description\":\"Makes one HTTP request through the host.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"url\":{\"type\":\"string\"},"
        "\"method\":{\"type\":\"string\"},\"body\":{\"type\":\"string\"}},\"required\":[\"url\"]}}]}");
}

static int32_t fetch(mcpwh_call_input *in)
{
    char *url = NULL, *method = NULL, *body = NULL, *reply = NULL, *body64 = NULL, *err = NULL;
    size_t body_len = 0, n = 0, len64 = 0;
    int64_t status = 0;
    unsigned char *out = NULL;
    long got;
    int32_t r;
    mcpwh_json_get_string(in->args, "url", &url, NULL);
    mcpwh_json_get_string(in->args, "method", &method, NULL);
    mcpwh_json_get_string(in->args, "body", &body, &body_len);
    r = mcpwh_http(method, url ? url : "", NULL, body, body_len, &reply, &n);
    if (r == MCPWH_FAILED && reply && mcpwh_json_get_string(mcpwh_span_of(reply, n), "error", &err, NULL) == MCPWH_JSON_OK) {
        r = mcpwh_result_errorf("error: %s", err);
    } else if (r != MCPWH_OK) {
        r = mcpwh_result_errorf("error: %s", mcpwh_status_name(r));
    } else if (mcpwh_json_get_int(mcpwh_span_of(reply, n), "status", &status) != MCPWH_JSON_OK ||
               mcpwh_json_get_string(mcpwh_span_of(reply, n), "body", &body64, &len64) != MCPWH_JSON_OK ||
               (out = malloc(len64 / 4 * 3 + 1)) == NULL ||
               (got = mcpwh_base64_decode(body64, len64, out)) < 0) {
        r = mcpwh_result_errorf("error: a malformed reply");
    } else {
        mcpwh_buf b = MCPWH_BUF_INIT;
        char head[32];
        snprintf(head, sizeof head, "%" PRId64 " ", status);
        mcpwh_buf_puts(&b, head);
        mcpwh_buf_append(&b, out, (size_t)got);
        r = b.failed ? MCPWH_NO_MEMORY : mcpwh_result_text(b.data, b.len, NULL, 0, 0);
        mcpwh_buf_free(&b);
    }
    free(url);
    free(method);
    free(body);
    free(reply);
    free(body64);
    free(err);
    free(out);
    return r == MCPWH_OK ? 0 : 1;
}

static int32_t call(void)
{
    mcpwh_call_input in;
    int32_t r = mcpwh_read_call(&in);
    if (r == MCPWH_OK)
        r = fetch(&in) == 0 ? MCPWH_OK : -1;
    mcpwh_call_input_free(&in);
    return r == MCPWH_OK ? 0 : 1;
}

MCPWH_PLUGIN(describe, call)
