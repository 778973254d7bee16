//! Files a configuration names are regular files of bounded size: a FIFO, a device or a
//! directory is a clear load error naming the field, never a hang.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use bridle_runtime::bundled::{MAX_FILE_BYTES, from_path};

/// A writable copy of the checkout example; returns the directory and its `bridle.toml` path.
fn copy_checkout() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/checkout");
    for sub in ["schemas", "policies"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for f in std::fs::read_dir(example.join(sub)).unwrap() {
            let f = f.unwrap();
            std::fs::copy(f.path(), dir.path().join(sub).join(f.file_name())).unwrap();
        }
    }
    let toml = dir.path().join("bridle.toml");
    std::fs::copy(example.join("bridle.toml"), &toml).unwrap();
    (dir, toml)
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo failed");
}

/// Loads `path` on another thread; a load that takes longer than 10 s fails the test instead of
/// hanging it.
fn load_within_10s(path: &Path) -> String {
    let (tx, rx) = mpsc::channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(from_path(&path).map(|_| ()).map_err(|e| e.to_string()));
    });
    match rx.recv_timeout(Duration::from_secs(10)) {
        Ok(result) => result.expect_err("the configuration must not load"),
        Err(_) => panic!("loading the configuration hung for 10 s"),
    }
}

fn point_schema_at(toml: &Path, target: &str) {
    let text = std::fs::read_to_string(toml).unwrap();
    let edited = text.replacen("schema = \"schemas/scale_replicas.json\"", &format!("schema = \"{target}\""), 1);
    assert_ne!(text, edited, "the example names schemas/scale_replicas.json");
    std::fs::write(toml, edited).unwrap();
}

#[test]
fn a_fifo_schema_path_is_a_clear_error_not_a_hang() {
    let (dir, toml) = copy_checkout();
    mkfifo(&dir.path().join("schemas/fifo.json"));
    point_schema_at(&toml, "schemas/fifo.json");
    let errors = load_within_10s(&toml);
    assert!(
        errors.contains("tools.scale_replicas.schema") && errors.contains("is a FIFO, not a regular file"),
        "{errors}"
    );
}

#[test]
fn dev_zero_as_a_schema_path_is_a_clear_error_not_a_hang() {
    let (_dir, toml) = copy_checkout();
    point_schema_at(&toml, "/dev/zero");
    let errors = load_within_10s(&toml);
    assert!(
        errors.contains("tools.scale_replicas.schema") && errors.contains("is a device, not a regular file"),
        "{errors}"
    );
}

#[test]
fn a_fifo_as_bridle_toml_is_a_clear_error_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("bridle.toml");
    mkfifo(&fifo);
    let errors = load_within_10s(&fifo);
    assert!(errors.contains("is a FIFO, not a regular file"), "{errors}");
}

#[test]
fn a_directory_or_fifo_as_a_policy_file_is_named_with_its_field() {
    let (dir, toml) = copy_checkout();
    std::fs::create_dir(dir.path().join("policies/dir.cedar")).unwrap();
    mkfifo(&dir.path().join("policies/fifo.cedarschema"));
    let text = std::fs::read_to_string(&toml).unwrap();
    let text = text
        .replace("files = [\"policies/tenancy.cedar\"", "files = [\"policies/dir.cedar\"")
        .replace("schema = \"policies/bridle.cedarschema\"", "schema = \"policies/fifo.cedarschema\"");
    std::fs::write(&toml, text).unwrap();
    let errors = load_within_10s(&toml);
    assert!(
        errors.contains("policy.files: cannot read `policies/dir.cedar`") && errors.contains("is a directory"),
        "{errors}"
    );
    assert!(errors.contains("policy.schema") && errors.contains("is a FIFO"), "{errors}");
}

#[test]
fn a_schema_file_past_the_size_bound_is_refused() {
    let (dir, toml) = copy_checkout();
    let big = dir.path().join("schemas/big.json");
    std::fs::write(&big, vec![b' '; usize::try_from(MAX_FILE_BYTES).unwrap() + 1]).unwrap();
    point_schema_at(&toml, "schemas/big.json");
    let errors = load_within_10s(&toml);
    assert!(errors.contains("more than the 1048576 a configuration file may have"), "{errors}");
}

#[test]
fn a_fifo_workflow_file_is_workflow_invalid_not_a_hang() {
    let config = bridle_runtime::bundled::checkout().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("flow.toml");
    mkfifo(&fifo);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(bridle_runtime::workflow::load(&fifo, &config).map(|_| ()));
    });
    let rejection = rx.recv_timeout(Duration::from_secs(10)).expect("loading the workflow hung").unwrap_err();
    assert_eq!(rejection.code, bridle_core::Code::WorkflowInvalid);
    assert!(rejection.message.contains("is a FIFO"), "{}", rejection.message);
}
