/* Which x86-64 instruction groups this machine can execute, not only list.
 *
 * A CPU (or a VM) may list a feature in /proc/cpuinfo that the kernel or the hypervisor does not
 * let a process use: AMX tiles are the known case, where the first tile instruction raises
 * SIGILL. So each group is tried for real, in a child process, and reported only if it ran.
 * Prints one name per line for the groups that executed; the build script maps them to
 * llama.cpp's GGML_* options. */
#include <immintrin.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int sink;

__attribute__((target("avx"))) static void try_avx(void) {
    __m256 a = _mm256_set1_ps((float)sink);
    sink = (int)_mm256_cvtss_f32(_mm256_add_ps(a, a));
}
__attribute__((target("avx2"))) static void try_avx2(void) {
    __m256i a = _mm256_set1_epi32(sink);
    sink = _mm256_extract_epi32(_mm256_add_epi32(a, a), 0);
}
__attribute__((target("fma"))) static void try_fma(void) {
    __m256 a = _mm256_set1_ps((float)sink);
    sink = (int)_mm256_cvtss_f32(_mm256_fmadd_ps(a, a, a));
}
__attribute__((target("f16c"))) static void try_f16c(void) {
    __m128i h = _mm_cvtps_ph(_mm_set1_ps((float)sink), 0);
    sink = _mm_extract_epi16(h, 0);
}
__attribute__((target("bmi2"))) static void try_bmi2(void) {
    sink = (int)_pdep_u32((unsigned)sink + 1, 0x55u);
}
/* GGML_AVX512 compiles with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw. */
__attribute__((target("avx512f,avx512cd,avx512vl,avx512dq,avx512bw"))) static void try_avx512(void) {
    __m512i a = _mm512_set1_epi16((short)sink);
    __m512i b = _mm512_add_epi16(a, a);                      /* BW */
    __m512i c = _mm512_conflict_epi32(b);                    /* CD */
    __m256i d = _mm256_mask_add_epi32(_mm256_setzero_si256(), 0x0f, _mm512_castsi512_si256(c),
                                      _mm512_castsi512_si256(c)); /* VL */
    __m512d e = _mm512_and_pd(_mm512_set1_pd(1.0), _mm512_set1_pd(2.0));  /* DQ */
    sink = _mm256_extract_epi32(d, 0) + (int)_mm512_reduce_add_pd(e);
}
__attribute__((target("avx512f,avx512vbmi"))) static void try_avx512_vbmi(void) {
    __m512i a = _mm512_set1_epi8((char)sink);
    sink = _mm_cvtsi128_si32(_mm512_castsi512_si128(_mm512_permutexvar_epi8(a, a)));
}
__attribute__((target("avx512f,avx512vnni"))) static void try_avx512_vnni(void) {
    __m512i a = _mm512_set1_epi32(sink);
    sink = _mm_cvtsi128_si32(_mm512_castsi512_si128(_mm512_dpbusd_epi32(a, a, a)));
}
__attribute__((target("avx512f,avx512bf16"))) static void try_avx512_bf16(void) {
    __m512 a = _mm512_set1_ps((float)sink);
    __m256bh b = _mm512_cvtneps_pbh(a);
    sink = (int)_mm512_reduce_add_ps(_mm512_dpbf16_ps(a, (__m512bh)_mm512_castsi256_si512((__m256i)b),
                                                     (__m512bh)_mm512_castsi256_si512((__m256i)b)));
}
__attribute__((target("avxvnni"))) static void try_avx_vnni(void) {
    __m256i a = _mm256_set1_epi32(sink);
    sink = _mm256_extract_epi32(_mm256_dpbusd_avx_epi32(a, a, a), 0);
}
/* AMX: Linux hands out tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM), then the
 * first tile instruction is what traps on machines that list AMX but do not allow it. */
__attribute__((target("amx-tile"))) static void try_amx_tile(void) {
    if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0)
        _exit(2);
    unsigned char config[64];
    memset(config, 0, sizeof config);
    config[0] = 1;                               /* palette 1 */
    config[16] = 64; config[48] = 16;            /* tile 0: 16 rows of 64 bytes */
    _tile_loadconfig(config);
    _tile_zero(0);
    _tile_release();
}

struct probe { const char *name; void (*run)(void); };
static const struct probe probes[] = {
    {"avx", try_avx}, {"avx2", try_avx2}, {"fma", try_fma}, {"f16c", try_f16c},
    {"bmi2", try_bmi2}, {"avx512", try_avx512}, {"avx512_vbmi", try_avx512_vbmi},
    {"avx512_vnni", try_avx512_vnni}, {"avx512_bf16", try_avx512_bf16},
    {"avx_vnni", try_avx_vnni}, {"amx_tile", try_amx_tile},
};

int main(void) {
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            probes[i].run();
            _exit(0);
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) < 0) continue;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) printf("%s\n", probes[i].name);
    }
    return 0;
}
