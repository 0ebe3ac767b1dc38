import CMirrorSystem
import Glibc

/// How the process's allocator is set up: called by the executable before the run starts its threads.
package enum ProcessMemory {
    /// glibc gives each thread that finds an arena busy an arena of its own, up to eight per core,
    /// and each keeps the memory freed into it: a run's file steps run on sixteen threads. Two
    /// arenas hold about 1.3 MiB less at the peak of the small benchmark (2,000 files) at the same
    /// CPU (BENCHMARKS.md): each thread's cache serves most small allocations without an arena's
    /// lock. A limit the user set (`MALLOC_ARENA_MAX`, `GLIBC_TUNABLES`) is left as it is.
    package static func limitArenas() {
        let tunables = getenv("GLIBC_TUNABLES").map { String(cString: $0) } ?? ""
        guard getenv("MALLOC_ARENA_MAX") == nil, !tunables.contains("glibc.malloc.arena_max") else { return }
        mirror_limit_malloc_arenas(2)
    }
}
