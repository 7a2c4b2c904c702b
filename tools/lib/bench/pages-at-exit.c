// Loaded with LD_PRELOAD by tools/startup-memory: at exit, writes the process's resident memory
// to $STARTUP_MEMORY_OUT: /proc/self/smaps as it is, then one line "page OFFSET" for each
// resident page of the main executable (its offset from the load address), from
// /proc/self/pagemap, so that the pages can be mapped to the binary's sections.
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((destructor)) static void write_pages(void) {
  const char *out_path = getenv("STARTUP_MEMORY_OUT");
  if (!out_path) return;
  FILE *out = fopen(out_path, "w");
  if (!out) return;
  FILE *smaps = fopen("/proc/self/smaps", "r");
  char buffer[8192];
  size_t count;
  while (smaps && (count = fread(buffer, 1, sizeof buffer, smaps)) > 0) fwrite(buffer, 1, count, out);
  if (smaps) fclose(smaps);

  char exe[4096];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (length <= 0) { fclose(out); return; }
  exe[length] = 0;
  FILE *maps = fopen("/proc/self/maps", "r");
  int pagemap = open("/proc/self/pagemap", O_RDONLY);
  unsigned long base = 0;
  while (maps && pagemap >= 0 && fgets(buffer, sizeof buffer, maps)) {
    unsigned long low, high, offset;
    char perms[8], path[4096] = "";
    if (sscanf(buffer, "%lx-%lx %7s %lx %*s %*s %4095s", &low, &high, perms, &offset, path) < 4) continue;
    if (strcmp(path, exe) != 0) continue;
    if (!base) base = low - offset;
    for (unsigned long address = low; address < high; address += 4096) {
      uint64_t entry = 0;
      if (pread(pagemap, &entry, sizeof entry, (off_t)(address / 4096 * 8)) == sizeof entry && (entry >> 63))
        fprintf(out, "page %lx\n", address - base);
    }
  }
  if (maps) fclose(maps);
  if (pagemap >= 0) close(pagemap);
  fclose(out);
}
