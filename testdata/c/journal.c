/*
 * journal - a C test guest for the cost of a task's journal (benchmarks): "repeat"
 * makes `count` host calls of one kind in a task: progress notifications, task log
 * lines, or checkpoints of `size` bytes. The tool is resumable, as checkpoints need.
 */
#include "mcpwh.h"

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"repeat\",\"description\":\"Makes count host calls of one kind (progress, log or checkpoint).\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"op\":{\"enum\":[\"progress\",\"log\",\"checkpoint\"]},"
        "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000},"
        "\"size\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":1048576}},\"required\":[\"op\",\"count\"]},"
        "\"execution\":{\"taskSupport\":\"required\",\"resumable\":true}}]}");
}

static int32_t call(void)
{
    mcpwh_call_input in;
    char *op = NULL;
    int64_t count = 0, size = 0, i;
    unsigned char *blob = NULL;
    int32_t r = MCPWH_OK;
    if (mcpwh_read_call(&in) != MCPWH_OK)
        return 1;
    if (mcpwh_json_get_string(in.args, "op", &op, NULL) != MCPWH_JSON_OK ||
        mcpwh_json_get_int(in.args, "count", &count) != MCPWH_JSON_OK) {
        mcpwh_call_input_free(&in);
        return mcpwh_result_errorf("op and count are required") == MCPWH_OK ? 0 : 1;
    }
    mcpwh_json_get_int(in.args, "size", &size);
    if (strcmp(op, "checkpoint") == 0) {
        blob = (unsigned char *)malloc((size_t)size + 1);
        if (blob == NULL)
            return 1;
        for (i = 0; i < size; i++)
            blob[i] = (unsigned char)(i * 131);
    }
    for (i = 1; i <= count && r == MCPWH_OK; i++) {
        if (strcmp(op, "progress") == 0)
            r = mcpwh_progress((double)i, (double)count, "step");
        else if (strcmp(op, "log") == 0)
            r = mcpwh_task_log("case 1234: PASS (0.01 s)\n", 25);
        else
            r = mcpwh_checkpoint_save(blob, (size_t)size);
    }
    free(blob);
    if (r != MCPWH_OK) {
        r = mcpwh_result_errorf("%s %lld failed: %s", op, (long long)i - 1, mcpwh_status_name(r));
    } else {
        r = mcpwh_result_text("done", 4, NULL, 0, 0);
    }
    free(op);
    mcpwh_call_input_free(&in);
    return r == MCPWH_OK ? 0 : 1;
}

MCPWH_PLUGIN(describe, call)
