/*
 * journal - a C test guest for the cost and the bounds of a task's journal
 * (benchmarks, tests): "repeat" makes `count` host calls of one kind in a task:
 * progress notifications, task log lines, or checkpoints of `size` bytes; "step"
 * does both of the last two per step, a log line and a checkpoint, as a test
 * runner that checkpoints after each case does. The tool is resumable, as
 * checkpoints need. A size up to 2 MiB lets tests go past the ABI's 1 MiB bound.
 * A host call that fails ends the call with an error result naming the call, its
 * status and, for FAILED, the host's reason.
 */
#include "mcpwh.h"

enum op { OP_PROGRESS, OP_LOG, OP_CHECKPOINT, OP_STEP };

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"repeat\",\"description\":\"Makes count host calls of one kind (progress, log or checkpoint), "
        "or count steps of a log line and a checkpoint each (step).\","
        "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"op\":{\"enum\":[\"progress\",\"log\",\"checkpoint\",\"step\"]},"
        "\"count\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000},"
        "\"size\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":2097152}},\"required\":[\"op\",\"count\"]},"
        "\"execution\":{\"taskSupport\":\"required\",\"resumable\":true}}]}");
}

/* failed ends the call with an error result: what failed, its status, and after
   FAILED the host's reason (the reply of the failed request, still readable). */
static int32_t failed(const char *what, int64_t n, int32_t status)
{
    char buf[4096 + 1], *why = NULL;
    int32_t got, r;
    if (status == MCPWH_FAILED && (got = mcpwh_host_reply_read(buf, (int32_t)sizeof buf - 1)) > 0) {
        buf[got] = '\0';
        mcpwh_json_get_string(mcpwh_span_of(buf, (size_t)got), "error", &why, NULL);
    }
    r = mcpwh_result_errorf("%s %lld failed: %s%s%s", what, (long long)n, mcpwh_status_name(status), why ? ": " : "", why ? why : "");
    free(why);
    return r;
}

static int32_t call(void)
{
    mcpwh_call_input in;
    char *name = NULL;
    int64_t count = 0, size = 0, i;
    unsigned char *blob = NULL;
    const char *what = "";
    enum op op;
    int32_t r = MCPWH_OK;
    if (mcpwh_read_call(&in) != MCPWH_OK)
        return 1;
    if (mcpwh_json_get_string(in.args, "op", &name, NULL) != MCPWH_JSON_OK ||
        mcpwh_json_get_int(in.args, "count", &count) != MCPWH_JSON_OK) {
        mcpwh_call_input_free(&in);
        return mcpwh_result_errorf("op and count are required") == MCPWH_OK ? 0 : 1;
    }
    mcpwh_json_get_int(in.args, "size", &size);
    if (strcmp(name, "progress") == 0)
        op = OP_PROGRESS;
    else if (strcmp(name, "log") == 0)
        op = OP_LOG;
    else if (strcmp(name, "step") == 0)
        op = OP_STEP;
    else
        op = OP_CHECKPOINT;
    if (op == OP_CHECKPOINT || op == OP_STEP) {
        blob = (unsigned char *)malloc((size_t)size + 1);
        if (blob == NULL)
            return 1;
        for (i = 0; i < size; i++)
            blob[i] = (unsigned char)(i * 131);
    }
    for (i = 1; i <= count && r == MCPWH_OK; i++) {
        switch (op) {
        case OP_PROGRESS:
            what = "progress";
            r = mcpwh_progress((double)i, (double)count, "step");
            break;
        case OP_LOG:
            what = "log";
            r = mcpwh_task_log("case 1234: PASS (0.01 s)\n", 25);
            break;
        case OP_CHECKPOINT:
            what = "checkpoint";
            r = mcpwh_checkpoint_save(blob, (size_t)size);
            break;
        case OP_STEP:
            what = "step's log";
            r = mcpwh_task_log("case 1234: PASS (0.01 s)\n", 25);
            if (r == MCPWH_OK) {
                what = "step's checkpoint";
                r = mcpwh_checkpoint_save(blob, (size_t)size);
            }
            break;
        }
    }
    free(blob);
    if (r != MCPWH_OK) {
        r = failed(what, i - 1, r);
    } else {
        r = mcpwh_result_text("done", 4, NULL, 0, 0);
    }
    free(name);
    mcpwh_call_input_free(&in);
    return r == MCPWH_OK ? 0 : 1;
}

MCPWH_PLUGIN(describe, call)
