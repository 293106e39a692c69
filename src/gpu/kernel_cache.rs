//! Compiled kernel programs kept on disk between runs, so a run pays NVRTC's compilation
//! (about a second for all stages) only once per source, options, toolchain and device.
//!
//! The folder is per user: `$PERIDOT_CACHE_DIR`, else `$XDG_CACHE_HOME/peridot/kernels`,
//! else `$HOME/.cache/peridot/kernels`, created with mode 0700; a folder owned by another
//! user is not used. `PERIDOT_KERNEL_CACHE=off` turns the cache off. An entry is named by
//! [`CacheKey`], a 128-bit hash of everything the image depends on (source, compile options,
//! NVRTC version, driver version, device name and compute capability), and holds a header
//! (magic, length, checksum of the image) before the image; it is written to a temporary
//! file in the folder and renamed into place, so a reader sees a whole entry or none. An
//! entry that cannot be read or fails its checks is ignored (the program is compiled again
//! and the entry rewritten): the cache never turns into an error.
//!
//! Units: bytes.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The first bytes of an entry (the trailing digit is the format's version).
const MAGIC: &[u8; 8] = b"PDKCACH1";
/// Magic, image length (u64, little endian), checksum of the image (u128, little endian).
const HEADER: usize = 8 + 8 + 16;

/// What a compiled image depends on; [`CacheKey::new`] hashes it.
#[derive(Debug, Clone)]
pub struct KeyParts<'a> {
    /// The whole program source.
    pub source: &'a str,
    /// The NVRTC options, in order.
    pub options: &'a [String],
    /// NVRTC's `(major, minor)` version.
    pub nvrtc: (i32, i32),
    /// The driver's version (`cuDriverGetVersion`, `13000` for 13.0).
    pub driver: i32,
    /// The device's name.
    pub device: &'a str,
    /// Its compute capability as the NVRTC target (`sm_90`).
    pub arch: &'a str,
}

/// The name of a cache entry: 32 hexadecimal digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `parts`; every part is length-prefixed, so no two different part lists
    /// hash the same text.
    pub fn new(parts: &KeyParts) -> CacheKey {
        let mut h = Fnv128::new();
        h.part(b"peridot kernel image");
        h.part(parts.source.as_bytes());
        h.part(&(parts.options.len() as u64).to_le_bytes());
        for o in parts.options {
            h.part(o.as_bytes());
        }
        h.part(&parts.nvrtc.0.to_le_bytes());
        h.part(&parts.nvrtc.1.to_le_bytes());
        h.part(&parts.driver.to_le_bytes());
        h.part(parts.device.as_bytes());
        h.part(parts.arch.as_bytes());
        CacheKey(format!("{:032x}", h.finish()))
    }

    /// The 32 hexadecimal digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// FNV-1a over 128 bits: stable across builds and platforms (unlike std's hasher), which
/// an on-disk key needs. Not a defence against a forged entry; the folder's mode is.
struct Fnv128(u128);

impl Fnv128 {
    const OFFSET: u128 = 0x6c62272e07bb014262b821756295c58d;
    const PRIME: u128 = 0x0000000001000000000000000000013b;

    fn new() -> Self {
        Fnv128(Self::OFFSET)
    }

    fn bytes(&mut self, data: &[u8]) {
        for &b in data {
            self.0 ^= u128::from(b);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    fn part(&mut self, data: &[u8]) {
        self.bytes(&(data.len() as u64).to_le_bytes());
        self.bytes(data);
    }

    fn finish(&self) -> u128 {
        self.0
    }
}

/// The checksum an entry keeps of its image.
fn checksum(image: &[u8]) -> u128 {
    let mut h = Fnv128::new();
    h.part(image);
    h.finish()
}

/// The on-disk cache of compiled kernel images.
#[derive(Debug, Clone)]
pub struct KernelCache {
    dir: PathBuf,
}

impl KernelCache {
    /// The cache the environment asks for (see the module documentation); `None` where it is
    /// turned off or no folder can be named (no `HOME`).
    pub fn from_env() -> Option<KernelCache> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if var("PERIDOT_KERNEL_CACHE").is_some_and(|v| v == "off" || v == "0") {
            return None;
        }
        let dir = match (var("PERIDOT_CACHE_DIR"), var("XDG_CACHE_HOME"), var("HOME")) {
            (Some(d), _, _) => PathBuf::from(d),
            (None, Some(x), _) => Path::new(&x).join("peridot").join("kernels"),
            (None, None, Some(h)) => Path::new(&h).join(".cache").join("peridot").join("kernels"),
            (None, None, None) => return None,
        };
        Some(KernelCache::at(dir))
    }

    /// A cache in `dir` (created on the first store).
    pub fn at(dir: impl Into<PathBuf>) -> KernelCache {
        KernelCache { dir: dir.into() }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `key`.
    pub fn path(&self, key: &CacheKey) -> PathBuf {
        self.dir.join(format!("{}.cubin", key.as_str()))
    }

    /// The image stored under `key`, or `None` where there is none or it cannot be read,
    /// is truncated or fails its checksum (such an entry is removed, best effort).
    pub fn load(&self, key: &CacheKey) -> Option<Vec<u8>> {
        if !owned_by_us(&self.dir) {
            return None;
        }
        let path = self.path(key);
        let data = fs::read(&path).ok()?;
        let image = decode(&data);
        if image.is_none() {
            let _ = fs::remove_file(&path);
        }
        image
    }

    /// Store `image` under `key`: the folder created (mode 0700) where missing, the entry
    /// written to a temporary file there and renamed into place.
    pub fn store(&self, key: &CacheKey, image: &[u8]) -> std::io::Result<()> {
        create_private_dir(&self.dir)?;
        if !owned_by_us(&self.dir) {
            return Err(std::io::Error::other(format!(
                "{} belongs to another user",
                self.dir.display()
            )));
        }
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".{}.{}.{}.tmp",
            key.as_str(),
            std::process::id(),
            SERIAL.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&tmp)?;
            f.write_all(&encode(image))?;
            f.sync_all()?;
            fs::rename(&tmp, self.path(key))
        })();
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }
}

/// An entry: header then image.
fn encode(image: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + image.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(image.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(image).to_le_bytes());
    out.extend_from_slice(image);
    out
}

/// The image of an entry whose header and checksum hold.
fn decode(data: &[u8]) -> Option<Vec<u8>> {
    if data.len() < HEADER || &data[..8] != MAGIC {
        return None;
    }
    let len = u64::from_le_bytes(data[8..16].try_into().ok()?);
    let sum = u128::from_le_bytes(data[16..HEADER].try_into().ok()?);
    let image = &data[HEADER..];
    (image.len() as u64 == len && !image.is_empty() && checksum(image) == sum)
        .then(|| image.to_vec())
}

/// Create `dir` and its missing parents with mode 0700 (an existing folder is left as is).
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Whether `dir` is owned by this process's user (always true off Unix).
fn owned_by_us(dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: getuid has no preconditions and cannot fail.
        let uid = unsafe { libc::getuid() };
        fs::metadata(dir).is_ok_and(|m| m.uid() == uid)
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(source: &'a str, options: &'a [String]) -> KeyParts<'a> {
        KeyParts {
            source,
            options,
            nvrtc: (13, 0),
            driver: 13000,
            device: "NVIDIA H100 80GB HBM3",
            arch: "sm_90",
        }
    }

    // The key changes with each thing the image depends on, and only with those.
    #[test]
    fn key_follows_every_part() {
        let opts = vec!["--gpu-architecture=sm_90".to_string()];
        let base = CacheKey::new(&parts("kernel", &opts));
        assert_eq!(base, CacheKey::new(&parts("kernel", &opts)));
        assert_eq!(base.as_str().len(), 32);
        assert!(base.as_str().chars().all(|c| c.is_ascii_hexdigit()));
        let other_opts = vec!["--gpu-architecture=sm_80".to_string()];
        let fast = vec![opts[0].clone(), "--use_fast_math".to_string()];
        let p = parts("kernel", &opts);
        let variants = [
            CacheKey::new(&parts("kernel ", &opts)),
            CacheKey::new(&parts("kernel", &other_opts)),
            CacheKey::new(&parts("kernel", &fast)),
            CacheKey::new(&KeyParts {
                nvrtc: (13, 1),
                ..p.clone()
            }),
            CacheKey::new(&KeyParts {
                driver: 13010,
                ..p.clone()
            }),
            CacheKey::new(&KeyParts {
                device: "NVIDIA H200",
                ..p.clone()
            }),
            CacheKey::new(&KeyParts {
                arch: "sm_100",
                ..p.clone()
            }),
        ];
        for (i, v) in variants.iter().enumerate() {
            assert_ne!(*v, base, "variant {i}");
        }
        // length prefixes: moving text between the source and an option is another key
        let split = vec!["b".to_string()];
        assert_ne!(
            CacheKey::new(&parts("ab", &[])),
            CacheKey::new(&parts("a", &split))
        );
    }

    // A stored image reads back; the folder is created private; no temporary file is left.
    #[test]
    fn store_then_load() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = KernelCache::at(tmp.path().join("a").join("kernels"));
        let key = CacheKey::new(&parts("x", &[]));
        assert_eq!(cache.load(&key), None);
        let image: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        cache.store(&key, &image).unwrap();
        assert_eq!(cache.load(&key), Some(image.clone()));
        // a second store replaces the entry whole
        cache.store(&key, &image[..10]).unwrap();
        assert_eq!(cache.load(&key).as_deref(), Some(&image[..10]));
        let names: Vec<_> = fs::read_dir(cache.dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec![format!("{}.cubin", key.as_str())]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(cache.dir()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
    }

    // A truncated, altered or foreign entry reads as absent (and is removed), never as an
    // error or a wrong image.
    #[test]
    fn corrupt_entries_are_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = KernelCache::at(tmp.path());
        let key = CacheKey::new(&parts("y", &[]));
        let image = vec![42u8; 1000];
        let path = cache.path(&key);
        let whole = encode(&image);
        let mut flipped = whole.clone();
        flipped[HEADER + 500] ^= 1;
        let mut long = whole.clone();
        long.push(0);
        for bad in [
            whole[..HEADER + 999].to_vec(),
            whole[..5].to_vec(),
            flipped,
            long,
            b"not an entry at all, but long enough to hold a header".to_vec(),
            Vec::new(),
        ] {
            fs::write(&path, &bad).unwrap();
            assert_eq!(cache.load(&key), None);
            assert!(!path.exists(), "a corrupt entry is removed");
        }
        // an entry that cannot be read as a file at all
        fs::create_dir(&path).unwrap();
        assert_eq!(cache.load(&key), None);
        fs::remove_dir(&path).unwrap();
        cache.store(&key, &image).unwrap();
        assert_eq!(cache.load(&key), Some(image));
    }

    // The environment picks the folder, and `off` turns the cache off.
    #[test]
    fn folder_from_the_environment() {
        // (one test touches these variables, so no other test sees them change)
        let saved: Vec<_> = [
            "PERIDOT_KERNEL_CACHE",
            "PERIDOT_CACHE_DIR",
            "XDG_CACHE_HOME",
        ]
        .iter()
        .map(|v| (*v, std::env::var_os(v)))
        .collect();
        std::env::remove_var("PERIDOT_KERNEL_CACHE");
        std::env::set_var("PERIDOT_CACHE_DIR", "/tmp/pd-cache");
        assert_eq!(
            KernelCache::from_env().unwrap().dir(),
            Path::new("/tmp/pd-cache")
        );
        std::env::remove_var("PERIDOT_CACHE_DIR");
        std::env::set_var("XDG_CACHE_HOME", "/tmp/xdg");
        assert_eq!(
            KernelCache::from_env().unwrap().dir(),
            Path::new("/tmp/xdg/peridot/kernels")
        );
        std::env::set_var("PERIDOT_KERNEL_CACHE", "off");
        assert!(KernelCache::from_env().is_none());
        for (v, value) in saved {
            match value {
                Some(x) => std::env::set_var(v, x),
                None => std::env::remove_var(v),
            }
        }
    }
}
