//! `SCAN_DEVICE`, read by `Device::auto()`. One test in its own binary: the
//! environment is the process's.

use scan::Device;

#[test]
fn scan_device_cpu_is_read_with_spaces_and_other_values_are_reported() {
    // A value from a shell or an .env file may carry spaces or a newline.
    for value in ["cpu", " CPU", "cpu\n"] {
        std::env::set_var("SCAN_DEVICE", value);
        let device = Device::auto();
        assert!(!device.is_cuda(), "{value:?}");
        assert_eq!(device.reason(), "SCAN_DEVICE=cpu", "{value:?}");
    }
    // Another value does not choose anything, and the reason says so.
    std::env::set_var("SCAN_DEVICE", "gpu");
    let device = Device::auto();
    assert!(device.reason().contains("SCAN_DEVICE=\"gpu\" ignored: only `cpu` is understood"), "{}", device.reason());
    // Not UTF-8: reported as well, not taken as unset.
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::env::set_var("SCAN_DEVICE", std::ffi::OsStr::from_bytes(b"cp\xffu"));
        let device = Device::auto();
        assert!(device.reason().contains("SCAN_DEVICE=\"cp\u{fffd}u\" ignored"), "{}", device.reason());
    }
    // Unset or empty: no note.
    for value in [None, Some("  ")] {
        match value {
            Some(v) => std::env::set_var("SCAN_DEVICE", v),
            None => std::env::remove_var("SCAN_DEVICE"),
        }
        assert!(!Device::auto().reason().contains("SCAN_DEVICE"), "{value:?}");
    }
}
