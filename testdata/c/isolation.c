/*
 * isolation - a C test guest that looks for what an earlier call left behind. Its one
 * tool, "probe", first reports what it sees, then leaves its own traces:
 *
 *   found    8-byte canaries anywhere in linear memory: static data, heap, the stack
 *            area and pages added by memory.grow (an earlier call wrote them to all
 *            four); 0 in a fresh state
 *   pages    the size of linear memory in 64 KiB pages; the module's initial 1
 *   data     an initialized static (7 at start; each call sets it to 99)
 *   bss      a zeroed static (0 at start; each call sets it to the canary's low half)
 *   sp       the stack pointer (the module's non-exported mutable global) on entry
 *   stdout   1 if stdout is open (fd_fdstat_get); "close_stdout" closes it
 *   seq      the call's argument "seq", echoed so that concurrent tests match replies
 *
 * Arguments (all optional): "grow" true also grows memory by a page and writes a
 * canary there; "leak_sp" true returns with the stack pointer 4 KiB lower; "close_stdout"
 * true closes fd 1; "fail" true writes the canaries and then traps.
 */
#include "mcpwh.h"

#include <wasi/api.h>

#define CANARY 0x6b6e6f77c0ffee11ULL /* assembled in code, never stored as data */

static int data_static = 7;
static uint64_t bss_static[4];

static int32_t describe(void)
{
    return mcpwh_write_manifest(
        "{\"tools\":[{\"name\":\"probe\",\"description\":\"Reports what an earlier call left.\","
        "\"inputSchema\":{\"type\":\"object\"}}]}");
}

static uintptr_t stack_pointer(void)
{
    uintptr_t sp;
    __asm__ volatile("global.get __stack_pointer\n\tlocal.set %0" : "=r"(sp));
    return sp;
}

__attribute__((noinline)) static void lower_stack_pointer(void)
{
    uintptr_t sp = stack_pointer() - 4096;
    __asm__ volatile("local.get %0\n\tglobal.set __stack_pointer" : : "r"(sp));
}

/* count scans all of linear memory for the canary. */
__attribute__((noinline)) static int count(void)
{
    size_t size = __builtin_wasm_memory_size(0) * 65536;
    volatile uint64_t *p = (volatile uint64_t *)0;
    int n = 0;
    for (size_t i = 1; i < size / 8; i++) /* word 0 is address 0 */
        if (p[i] == CANARY)
            n++;
    return n;
}

__attribute__((noinline)) static void mark_stack(void)
{
    volatile uint64_t frame[8];
    for (int i = 0; i < 8; i++)
        frame[i] = CANARY;
}

static int flag(mcpwh_span args, const char *key)
{
    int v = 0;
    return mcpwh_json_get_bool(args, key, &v) == MCPWH_JSON_OK && v;
}

static int leak_sp;

__attribute__((noinline)) static int32_t probe(void)
{
    uintptr_t sp = stack_pointer();
    int found = count();
    int pages = (int)__builtin_wasm_memory_size(0);
    int seen_data = data_static;
    uint64_t seen_bss = bss_static[0];
    __wasi_fdstat_t st;
    int stdout_open = __wasi_fd_fdstat_get(1, &st) == 0;
    mcpwh_call_input in;
    int64_t seq = -1;
    char text[256];
    int32_t rc;

    if (mcpwh_read_call(&in) != MCPWH_OK)
        return mcpwh_fail("cannot read the call input");
    mcpwh_json_get_int(in.args, "seq", &seq);
    snprintf(text, sizeof text, "found=%d pages=%d data=%d bss=%llu sp=%lu stdout=%d seq=%lld",
             found, pages, seen_data, (unsigned long long)seen_bss, (unsigned long)sp, stdout_open,
             (long long)seq);

    /* leave traces everywhere */
    data_static = 99;
    bss_static[0] = CANARY & 0xffffffff;
    bss_static[1] = CANARY;
    uint64_t *heap = malloc(64);
    if (heap != NULL)
        heap[3] = CANARY; /* never freed */
    mark_stack();
    if (flag(in.args, "grow")) {
        size_t old = __builtin_wasm_memory_grow(0, 1);
        if (old != (size_t)-1)
            *(volatile uint64_t *)(old * 65536 + 64) = CANARY;
    }
    if (flag(in.args, "close_stdout"))
        (void)!__wasi_fd_close(1);
    leak_sp = flag(in.args, "leak_sp");
    int fail = flag(in.args, "fail");
    mcpwh_call_input_free(&in);
    if (fail)
        __builtin_trap();
    rc = mcpwh_result_text(text, strlen(text), NULL, 0, 0);
    return rc == MCPWH_OK ? 0 : 1;
}

MCPWH_EXPORT("mcpwh_abi_version") int32_t mcpwh_abi_version(void);
MCPWH_EXPORT("mcpwh_describe") int32_t mcpwh_describe(void);
MCPWH_EXPORT("mcpwh_call") int32_t mcpwh_call(void);
int32_t mcpwh_abi_version(void) { return MCPWH_ABI_VERSION; }
int32_t mcpwh_describe(void) { return describe(); }

/* mcpwh_call has no stack frame of its own, so the lowered stack pointer outlives it. */
int32_t mcpwh_call(void)
{
    int32_t rc = probe();
    if (leak_sp)
        lower_stack_pointer();
    return rc;
}
