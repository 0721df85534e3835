//! What the process reads of itself, as burtorch-bench's cpu_clocks.hpp and process_stats.hpp: the
//! CPU clocks of the timed loop (perf_event_open, user mode), its CPU time, and its peak memory.
//! A measure this OS cannot give is None with a source saying why.

pub const PRIVATE_SOURCE: &str =
    "not sampled by the native driver (Linux has no peak of private memory; it would need a sampling thread)";

pub struct ClockReading {
    pub cycles: Option<u64>,
    pub instructions: Option<u64>,
    pub source: String,
}

pub struct PeakMemory {
    pub resident: Option<u64>,
    pub virtual_: Option<u64>,
    pub resident_source: String,
    pub virtual_source: String,
}

/// User plus system CPU time of this process so far, in seconds.
#[cfg(unix)]
pub fn cpu_time_s() -> Option<f64> {
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

#[cfg(not(unix))]
pub fn cpu_time_s() -> Option<f64> {
    None
}

/// `key:   123 kB` of /proc/self/status, in bytes.
pub fn proc_status_bytes(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.split_once(':').is_some_and(|(k, _)| k == key))?;
    let kib = line.split_once(':')?.1.trim().strip_suffix(" kB")?;
    kib.parse::<u64>().ok().map(|k| k * 1024)
}

#[cfg(target_os = "linux")]
pub fn peak_memory() -> PeakMemory {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let resident = proc_status_bytes(&status, "VmHWM");
    let virtual_ = proc_status_bytes(&status, "VmPeak");
    PeakMemory {
        resident,
        virtual_,
        resident_source: if resident.is_some() { "/proc/self/status VmHWM" } else { "no VmHWM in /proc/self/status" }.into(),
        virtual_source: if virtual_.is_some() { "/proc/self/status VmPeak" } else { "no VmPeak in /proc/self/status" }.into(),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn peak_memory() -> PeakMemory {
    PeakMemory {
        resident: None,
        virtual_: None,
        resident_source: "not measured by burn-bench on this OS".into(),
        virtual_source: "not measured by burn-bench on this OS".into(),
    }
}

#[cfg(target_os = "linux")]
mod perf {
    // linux/perf_event.h: the attribute's first fields, the rest zero (size = PERF_ATTR_SIZE_VER5).
    const PERF_TYPE_HARDWARE: u32 = 0;
    const CPU_CYCLES: u64 = 0;
    const INSTRUCTIONS: u64 = 1;
    const FORMAT_TOTAL_TIME_ENABLED: u64 = 1;
    const FORMAT_TOTAL_TIME_RUNNING: u64 = 2;
    const DISABLED: u64 = 1;
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    const FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    const IOC_ENABLE: libc::c_ulong = 0x2400;
    const IOC_DISABLE: libc::c_ulong = 0x2401;
    const IOC_RESET: libc::c_ulong = 0x2403;
    const ATTR_SIZE: usize = 112;

    #[repr(C)]
    struct Attr {
        kind: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        flags: u64,
        rest: [u64; 8],
    }

    pub fn open(config: u64) -> Result<i32, i32> {
        let attr = Attr {
            kind: PERF_TYPE_HARDWARE,
            size: ATTR_SIZE as u32,
            config: if config == 0 { CPU_CYCLES } else { INSTRUCTIONS },
            sample_period: 0,
            sample_type: 0,
            read_format: FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
            flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
            rest: [0; 8],
        };
        const _: () = assert!(std::mem::size_of::<Attr>() == ATTR_SIZE);
        let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &attr as *const Attr, 0, -1, -1, FLAG_FD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0));
        }
        let fd = fd as i32;
        unsafe {
            libc::ioctl(fd, IOC_RESET as _, 0);
            libc::ioctl(fd, IOC_ENABLE as _, 0);
        }
        Ok(fd)
    }

    pub fn disable(fd: i32) {
        unsafe { libc::ioctl(fd, IOC_DISABLE as _, 0) };
    }

    /// The count, scaled where the counter was multiplexed; or why there is none.
    pub fn read(fd: i32) -> (Option<u64>, String) {
        let mut words = [0u64; 3];
        let n = unsafe { libc::read(fd, words.as_mut_ptr().cast(), 24) };
        unsafe { libc::close(fd) };
        if n != 24 {
            return (None, ": read failed".into());
        }
        let [value, enabled, running] = words;
        if running == 0 {
            return (None, ": counter never scheduled on the PMU (time_running = 0)".into());
        }
        if running >= enabled {
            return (Some(value), String::new());
        }
        let share = running as f64 / enabled as f64;
        (Some((value as f64 / share).round() as u64), format!(" (scaled: counted {:.0}% of the time, multiplexed)", share * 100.0))
    }

    pub fn failure(errno: i32) -> String {
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid").unwrap_or_default();
        let paranoid = if paranoid.trim().is_empty() { "?" } else { paranoid.trim() };
        let why = match errno {
            libc::EACCES | libc::EPERM => format!(
                "not permitted, kernel.perf_event_paranoid={paranoid}; own-process user-mode counting needs <= 2 or CAP_PERFMON"
            ),
            libc::ENOENT | libc::ENODEV | libc::EOPNOTSUPP => {
                "no hardware cycle counter exposed (typical in a VM without PMU passthrough)".into()
            }
            libc::ENOSYS => "kernel built without perf events".into(),
            e => std::io::Error::from_raw_os_error(e).to_string(),
        };
        format!("perf_event_open: errno {errno}: {why}")
    }
}

pub struct CycleCounter {
    cycles: Result<i32, String>,
    instructions: Option<i32>,
}

impl CycleCounter {
    #[cfg(target_os = "linux")]
    pub fn start() -> Self {
        match perf::open(0) {
            // Instructions are optional: cycles alone are the paper's measure.
            Ok(fd) => CycleCounter { cycles: Ok(fd), instructions: perf::open(1).ok() },
            Err(errno) => CycleCounter { cycles: Err(perf::failure(errno)), instructions: None },
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn start() -> Self {
        CycleCounter { cycles: Err("no cycle counter implemented in burn-bench on this OS".into()), instructions: None }
    }

    #[cfg(target_os = "linux")]
    pub fn stop(&mut self) -> ClockReading {
        let fd = match &self.cycles {
            Ok(fd) => *fd,
            Err(why) => return ClockReading { cycles: None, instructions: None, source: why.clone() },
        };
        perf::disable(fd);
        if let Some(i) = self.instructions {
            perf::disable(i);
        }
        let (cycles, note) = perf::read(fd);
        let instructions = self.instructions.take().and_then(|i| perf::read(i).0);
        self.cycles = Err("read already".into());
        ClockReading { cycles, instructions, source: format!("perf_event_open{note}") }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn stop(&mut self) -> ClockReading {
        ClockReading { cycles: None, instructions: None, source: self.cycles.clone().err().unwrap_or_default() }
    }
}
