/*
 * asker - a C test guest that asks the user for input: "ask" elicits a confirmation
 * and returns the action. Benchmarks park tasks on it (memory per input_required task).
 */
#include "mcpwh.h"

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"ask\",\"description\":\"Asks the user to confirm and returns the action.\","
        "\"inputSchema\":{\"type\":\"object\"},\"execution\":{\"taskSupport\":\"optional\"}}]}");
}

static int32_t call(void)
{
    static const char params[] =
        "{\"message\":\"Proceed?\",\"requestedSchema\":{\"type\":\"object\","
        "\"properties\":{\"confirm\":{\"type\":\"boolean\"}}}}";
    char *reply = NULL, *action = NULL;
    size_t n = 0;
    int32_t r = mcpwh_request("elicit", params, sizeof params - 1, &reply, &n);
    if (r == MCPWH_FAILED && reply != NULL &&
        mcpwh_json_get_string(mcpwh_span_of(reply, n), "error", &action, NULL) == MCPWH_JSON_OK) {
        /* the host says why, such as "no answer within 1h" (input_timeout) */
        free(reply);
        r = mcpwh_result_errorf("could not ask: %s", action);
        free(action);
        return r == MCPWH_OK ? 0 : 1;
    }
    if (r != MCPWH_OK) {
        free(reply);
        return mcpwh_result_errorf("could not ask: %s", mcpwh_status_name(r)) == MCPWH_OK ? 0 : 1;
    }
    if (mcpwh_json_get_string(mcpwh_span_of(reply, n), "action", &action, NULL) != MCPWH_JSON_OK) {
        free(reply);
        return mcpwh_result_errorf("no action in the reply") == MCPWH_OK ? 0 : 1;
    }
    r = mcpwh_result_text(action, strlen(action), NULL, 0, 0);
    free(action);
    free(reply);
    return r == MCPWH_OK ? 0 : 1;
}

MCPWH_PLUGIN(describe, call)
