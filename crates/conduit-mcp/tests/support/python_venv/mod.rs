//! A Python venv with the reference `standardwebhooks` library from PyPI
//! (made once under the target directory and shared by the test binaries
//! that check our webhook signatures against it). Without python3 a test
//! using it is skipped, unless `CI` requires it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The package, pinned.
pub const PACKAGE: &str = "standardwebhooks==1.1.0";

/// The venv's python with the package installed, or `None` (skipped) without python3.
pub fn standardwebhooks_python() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("../standardwebhooks-venv");
    let py = venv.join("bin/python");
    let has = |py: &Path| Command::new(py).args(["-c", "import standardwebhooks"]).status().is_ok_and(|s| s.success());
    if py.is_file() && has(&py) {
        return Some(py);
    }
    if Command::new("python3").arg("--version").status().is_err() {
        assert!(std::env::var("CI").is_err(), "python3 is required for the standardwebhooks interop tests");
        eprintln!("skipped: no python3");
        return None;
    }
    let ok = Command::new("python3").args(["-m", "venv"]).arg(&venv).status().is_ok_and(|s| s.success());
    assert!(ok, "python3 -m venv {}", venv.display());
    let ok = Command::new(venv.join("bin/pip")).args(["install", "-q", PACKAGE]).status().is_ok_and(|s| s.success());
    assert!(ok && has(&py), "pip install {PACKAGE}");
    Some(py)
}
