/*
 * library - a C test guest of ABI v1.1: a resource, a resource template, a prompt
 * and completions, served through the method form of mcpwh_call, plus a tool that
 * announces a resource update. Built with sdk-guest/c/mcpwh.h (make plugins).
 */
#include "mcpwh.h"

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"touch\",\"description\":\"Announces that a book changed.\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\"}},\"required\":[\"id\"]}}],"
        "\"resources\":[{\"uri\":\"lib://readme\",\"name\":\"readme\",\"mimeType\":\"text/plain\"}],"
        "\"resourceTemplates\":[{\"uriTemplate\":\"lib://books/{id}\",\"name\":\"book\",\"mimeType\":\"text/plain\"}],"
        "\"prompts\":[{\"name\":\"summarize\",\"arguments\":[{\"name\":\"topic\",\"required\":true}]}],"
        "\"completions\":true}");
}

/* write_buf writes b as the output and frees it; returns what mcpwh_call returns. */
static int32_t write_buf(mcpwh_buf *b)
{
    int32_t r = b->failed ? MCPWH_NO_MEMORY : mcpwh_write_output(b->data, b->len);
    mcpwh_buf_free(b);
    return r == MCPWH_OK ? 0 : mcpwh_fail("cannot write the result: %s", mcpwh_status_name(r));
}

static int32_t read_resource(mcpwh_span params)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    char *uri = NULL;
    if (mcpwh_json_get_string(params, "uri", &uri, NULL) != MCPWH_JSON_OK)
        return mcpwh_fail("resources/read without a uri");
    mcpwh_buf_puts(&b, "{\"contents\":[{\"uri\":");
    mcpwh_buf_json_cstr(&b, uri);
    mcpwh_buf_puts(&b, ",\"mimeType\":\"text/plain\",\"text\":");
    if (strcmp(uri, "lib://readme") == 0)
        mcpwh_buf_json_cstr(&b, "Welcome to the library.");
    else if (strncmp(uri, "lib://books/", 12) == 0) {
        mcpwh_buf text = MCPWH_BUF_INIT;
        mcpwh_buf_printf(&text, "Book %s", uri + 12);
        if (text.failed)
            b.failed = 1;
        else
            mcpwh_buf_json_string(&b, text.data, text.len);
        mcpwh_buf_free(&text);
    } else {
        free(uri);
        mcpwh_buf_free(&b);
        return mcpwh_fail("no such resource");
    }
    mcpwh_buf_puts(&b, "}]}");
    free(uri);
    return write_buf(&b);
}

static int32_t get_prompt(mcpwh_span params)
{
    mcpwh_buf b = MCPWH_BUF_INIT;
    mcpwh_span args;
    char *topic = NULL;
    if (mcpwh_json_member(params, "arguments", &args) != MCPWH_JSON_OK ||
        mcpwh_json_get_string(args, "topic", &topic, NULL) != MCPWH_JSON_OK)
        return mcpwh_fail("prompts/get without a topic");
    mcpwh_buf_puts(&b, "{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":");
    mcpwh_buf_json_cstr(&b, topic);
    mcpwh_buf_puts(&b, "}}]}");
    free(topic);
    return write_buf(&b);
}

static int32_t complete(mcpwh_span params)
{
    static const char *const topics[] = { "birds", "boats", "bread", "cheese" };
    mcpwh_buf b = MCPWH_BUF_INIT;
    mcpwh_span arg;
    char *value = NULL;
    size_t n = 0, i;
    int first = 1;
    if (mcpwh_json_member(params, "argument", &arg) != MCPWH_JSON_OK ||
        mcpwh_json_get_string(arg, "value", &value, &n) != MCPWH_JSON_OK)
        return mcpwh_fail("completion/complete without an argument value");
    mcpwh_buf_puts(&b, "{\"completion\":{\"values\":[");
    for (i = 0; i < sizeof topics / sizeof *topics; i++) {
        if (strncmp(topics[i], value, n) != 0)
            continue;
        if (!first)
            mcpwh_buf_putc(&b, ',');
        mcpwh_buf_json_cstr(&b, topics[i]);
        first = 0;
    }
    mcpwh_buf_puts(&b, "]}}");
    free(value);
    return write_buf(&b);
}

static int32_t touch(mcpwh_span args)
{
    char *id = NULL, uri[64];
    int32_t r;
    if (mcpwh_json_get_string(args, "id", &id, NULL) != MCPWH_JSON_OK)
        return mcpwh_result_errorf("id is required") == MCPWH_OK ? 0 : 1;
    snprintf(uri, sizeof uri, "lib://books/%s", id);
    free(id);
    r = mcpwh_resource_updated(uri);
    if (r != MCPWH_OK)
        return mcpwh_result_errorf("not announced: %s", mcpwh_status_name(r)) == MCPWH_OK ? 0 : 1;
    return mcpwh_result_text(uri, strlen(uri), NULL, 0, 0) == MCPWH_OK ? 0 : 1;
}

static int32_t call(void)
{
    mcpwh_call_input in;
    int32_t r = mcpwh_read_call(&in);
    if (r != MCPWH_OK) {
        mcpwh_call_input_free(&in);
        return mcpwh_fail("bad call input: %s", mcpwh_status_name(r));
    }
    if (mcpwh_call_is_method(&in, "resources/read"))
        r = read_resource(in.params);
    else if (mcpwh_call_is_method(&in, "prompts/get"))
        r = get_prompt(in.params);
    else if (mcpwh_call_is_method(&in, "completion/complete"))
        r = complete(in.params);
    else if (mcpwh_call_is(&in, "touch"))
        r = touch(in.args);
    else
        r = mcpwh_fail("unknown call");
    mcpwh_call_input_free(&in);
    return r;
}

MCPWH_PLUGIN(describe, call)
