/* openblas_buffers.c - the pages of OpenBLAS's GEMM buffers a run touches
 * (docs/benchmarks.md "What the budget covers, measured"; the figure in
 * runtime/PlanFormat.h cpuBlasAllowanceBytes).
 *
 *   gcc -O2 -I/usr/include/x86_64-linux-gnu/openblas-pthread \
 *       tools/bench/openblas_buffers.c -o /tmp/openblas_buffers -lopenblas
 *   OPENBLAS_NUM_THREADS=2 [OPENBLAS_CORETYPE=Sandybridge] \
 *       /tmp/openblas_buffers M N K TA TB [M N K TA TB]...
 *
 * Runs each row-major cblas_sgemm (TA, TB: 0 or 1) on zeroed matrices that
 * it maps and unmaps itself, then prints the resident KiB of every
 * anonymous mapping of 16 MiB or more: OpenBLAS's buffers (128 MiB of
 * address space a thread, and one of about 32 MiB), the matrices being
 * gone. The remat CPU backend calls sgemm with at most 4096 rows of C
 * (backends/cpu/Gemm.cpp), so M = 4096 with N and K past the blocking
 * sizes gives the most any of its GEMMs touches. V=1 lists the mappings.
 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

char *openblas_get_config(void);

static long bufferKiB(int verbose) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  unsigned long a = 0, b = 0;
  long sum = 0;
  int big = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long x, y;
    if (sscanf(line, "%lx-%lx ", &x, &y) == 2 &&
        strchr(line, ' ') > strchr(line, '-')) {
      a = x;
      b = y;
      big = (b - a) >= (16ul << 20);
    } else if (!strncmp(line, "Rss:", 4) && big) {
      long kb = atol(line + 4);
      sum += kb;
      if (verbose)
        printf("  mapping %lu KiB: %ld KiB resident\n", (b - a) >> 10, kb);
    }
  }
  fclose(f);
  return sum;
}

static float *zeroed(size_t n) {
  void *p = mmap(0, n * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                 -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    exit(1);
  }
  return p;
}

int main(int argc, char **argv) {
  printf("%s, %d threads; before: %ld KiB\n", openblas_get_config(),
         openblas_get_num_threads(), bufferKiB(0));
  for (int i = 1; i + 4 < argc; i += 5) {
    int m = atoi(argv[i]), n = atoi(argv[i + 1]), k = atoi(argv[i + 2]);
    int ta = atoi(argv[i + 3]), tb = atoi(argv[i + 4]);
    float *A = zeroed((size_t)m * k), *B = zeroed((size_t)k * n),
          *C = zeroed((size_t)m * n);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, 1, A, ta ? m : k, B,
                tb ? k : n, 0, C, n);
    munmap(A, (size_t)m * k * 4);
    munmap(B, (size_t)k * n * 4);
    munmap(C, (size_t)m * n * 4);
    printf("after %d x %d x %d (%d%d): %ld KiB\n", m, n, k, ta, tb,
           bufferKiB(getenv("V") != 0));
  }
  return 0;
}
