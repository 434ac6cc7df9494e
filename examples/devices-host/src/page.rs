//! Building the page: `cargo build -p devices-web --target
//! wasm32-unknown-unknown --profile web`, then `wasm-bindgen --target web`,
//! then `wasm-opt -Oz` when binaryen is installed.
//!
//! The output is `target/devices-web/pkg/` (`devices_web.js`,
//! `devices_web_bg.wasm`, and a `gzip -9` copy of each, `.gz`, which the
//! host sends to browsers that take gzip: what a user downloads). wasm-bindgen and wasm-opt run again only when
//! cargo produced a different `.wasm` (a stamp file records its size and
//! modification time).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .canonicalize()
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The workspace target directory (`CARGO_TARGET_DIR` or `target/`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"))
}

/// Where the built page lives.
pub fn pkg_dir() -> PathBuf {
    target_dir().join("devices-web").join("pkg")
}

/// The two files the page needs, in [`pkg_dir`], with their `Content-Type`.
pub const PAGE_FILES: [(&str, &str); 2] = [
    ("devices_web.js", "text/javascript"),
    ("devices_web_bg.wasm", "application/wasm"),
];

/// The WebAssembly features `wasm-opt` may keep, named explicitly:
/// wasm-bindgen drops the `target_features` section wasm-opt would detect
/// them from, and `--all-features` lets older binaryen releases (Debian's 108) emit typed
/// function references, which Chromium refuses to compile. These are the
/// ones rustc's `wasm32-unknown-unknown` output uses, plus SIMD (the
/// dependency tree has `simd128` code paths).
const WASM_FEATURES: &str =
    "--enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
     --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd";

/// The oldest binaryen whose `wasm-opt` the build uses. Debian's 108
/// turns wasm-bindgen's `externref` table into a `funcref` table: the page
/// then fails at start-up with "WebAssembly.Table.set(): Argument 1 is
/// invalid for table". Release 132 (npm `binaryen`) was checked to produce
/// a working page; releases in between were not tried.
const MIN_WASM_OPT: u32 = 109;

/// `wasm-opt --version`'s release number (`wasm-opt version 108` → 108).
fn wasm_opt_version() -> Option<u32> {
    let out = Command::new("wasm-opt").arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let rest = &text[text.find("version")? + "version".len()..];
    rest.trim_start()
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// Bumped when the wasm-bindgen/wasm-opt steps change, so that a page
/// built by an older pipeline is rebuilt.
const PIPELINE: &str = "4";

/// What [`build`] did.
#[derive(Clone, Debug)]
pub struct Built {
    /// The directory with [`PAGE_FILES`].
    pub dir: PathBuf,
    /// Size of the final `.wasm`, bytes.
    pub wasm_bytes: u64,
    /// What a browser downloads: the gzip copies of the `.wasm` and the
    /// `.js`, bytes together.
    pub served_gzip_bytes: u64,
    /// Whether `wasm-opt` ran (binaryen installed).
    pub optimized: bool,
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("could not run {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

fn tool_available(name: &str, arg: &str) -> bool {
    Command::new(name)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds the page (see the module docs).
///
/// # Errors
/// A message naming the step that failed: the cargo build (the
/// `wasm32-unknown-unknown` target missing: `rustup target add
/// wasm32-unknown-unknown`), `wasm-bindgen` missing or of another version
/// than `Cargo.lock`'s (`cargo install wasm-bindgen-cli --version …`),
/// `wasm-opt` failing.
pub fn build() -> Result<Built, String> {
    let root = repo_root();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // Written to stderr directly, not with `eprintln!`: the browser tests
    // call this, and libtest would capture the line until the test ends —
    // a silent build of minutes reads as a hang.
    {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "devices-host: building the page (cargo build -p devices-web --target wasm32-unknown-unknown \
             --profile web; optimized, a few minutes the first time)"
        );
    }
    run(
        Command::new(&cargo)
            .current_dir(&root)
            .args("build -p devices-web --target wasm32-unknown-unknown --profile web".split(' '))
            // Keep the `target_features` section wasm-bindgen reads (the
            // profile's `strip = true` removes it and wasm-bindgen warns);
            // wasm-bindgen drops the names below instead.
            .args(["--config", "profile.web.strip=\"debuginfo\""])
            // scripts/test starts this same command early, in the
            // background: keep the two alike.
            .env_remove("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER"),
        "cargo build of the page",
    )?;
    let wasm = target_dir()
        .join("wasm32-unknown-unknown")
        .join("web")
        .join("devices-web.wasm");
    let meta = std::fs::metadata(&wasm).map_err(|e| format!("{}: {e}", wasm.display()))?;
    let stamp_text = format!(
        "{PIPELINE} {} {:?}",
        meta.len(),
        meta.modified()
            .ok()
            .map(|t| t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default())
    );
    let dir = pkg_dir();
    let stamp = dir.join(".built-from");
    let fresh = std::fs::read_to_string(&stamp).is_ok_and(|s| s == stamp_text)
        && PAGE_FILES
            .iter()
            .all(|(f, _)| dir.join(f).exists() && dir.join(format!("{f}.gz")).exists());
    let out_wasm = dir.join(PAGE_FILES[1].0);
    let mut optimized = std::fs::read_to_string(dir.join(".optimized")).is_ok_and(|s| s == "yes");
    if !fresh {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        if !tool_available("wasm-bindgen", "--version") {
            return Err("wasm-bindgen is not installed: cargo install wasm-bindgen-cli --version <the wasm-bindgen version in Cargo.lock> (scripts/test does it)".into());
        }
        run(
            Command::new("wasm-bindgen")
                .args(
                    "--target web --no-typescript --remove-name-section --remove-producers-section \
                     --out-name devices_web --out-dir"
                        .split_whitespace(),
                )
                .arg(&dir)
                .arg(&wasm),
            "wasm-bindgen",
        )?;
        let binaryen = wasm_opt_version();
        optimized = binaryen.is_some_and(|v| v >= MIN_WASM_OPT);
        if optimized {
            run(
                Command::new("wasm-opt")
                    .arg("-Oz")
                    .args(WASM_FEATURES.split_whitespace())
                    .arg(&out_wasm)
                    .arg("-o")
                    .arg(&out_wasm),
                "wasm-opt",
            )?;
        } else {
            eprintln!(
                "devices-host: tip: {} — the page works as it is; binaryen {MIN_WASM_OPT} or newer \
                 (e.g. `npm install -g binaryen`) makes it smaller with `wasm-opt -Oz`",
                match binaryen {
                    None => "wasm-opt (binaryen) is not installed".to_string(),
                    Some(v) => format!("wasm-opt {v} is too old to use (it breaks wasm-bindgen's externref table)"),
                }
            );
        }
        for (name, _) in PAGE_FILES {
            write_gzip_copy(&dir.join(name))?;
        }
        std::fs::write(dir.join(".optimized"), if optimized { "yes" } else { "no" })
            .and_then(|()| std::fs::write(&stamp, &stamp_text))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let wasm_bytes = std::fs::metadata(&out_wasm).map(|m| m.len()).unwrap_or(0);
    let served_gzip_bytes = PAGE_FILES
        .iter()
        .map(|(f, _)| {
            std::fs::metadata(dir.join(format!("{f}.gz")))
                .map(|m| m.len())
                .unwrap_or(0)
        })
        .sum();
    Ok(Built {
        dir,
        wasm_bytes,
        served_gzip_bytes,
        optimized,
    })
}

/// Writes `{path}.gz`, `path` compressed at gzip's best level (what
/// `gzip -9` does), after `path` itself so the host sees it as fresh.
fn write_gzip_copy(path: &Path) -> Result<(), String> {
    use std::io::Write as _;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let gz = encoder
        .write_all(&bytes)
        .and_then(|()| encoder.finish())
        .map_err(|e| format!("gzip of {}: {e}", path.display()))?;
    let mut out = path.as_os_str().to_owned();
    out.push(".gz");
    std::fs::write(&out, gz).map_err(|e| format!("{}: {e}", path.display()))
}
