//! The extension allocates through Polars' allocator (the `polars.polars._allocator` capsule,
//! jemalloc in Polars' Linux wheels).
//!
//! Why: a read's output is hundreds of MB that Polars frees when the DataFrame goes. With the
//! system allocator those blocks are returned to the kernel at once (glibc maps large blocks), so
//! the next read in the same process faults in and zeroes every page again: 40% of a warm read of
//! the embedding table was the kernel clearing pages. Polars' allocator keeps freed pages for a
//! while, and pages freed by Polars (or by an earlier read) are reused.
//!
//! The choice is made once, at the first allocation (in the module's init, GIL held), and never
//! changes, so every block is freed by the allocator that gave it. Without the capsule (Polars not
//! importable) it is the system allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_char;
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

/// The function table Polars exports (`polars-python`'s allocator capsule layout).
#[repr(C)]
struct Capsule {
    alloc: unsafe extern "C" fn(usize, usize) -> *mut u8,
    dealloc: unsafe extern "C" fn(*mut u8, usize, usize),
    alloc_zeroed: unsafe extern "C" fn(usize, usize) -> *mut u8,
    realloc: unsafe extern "C" fn(*mut u8, usize, usize, usize) -> *mut u8,
}

const NAME: &[u8] = b"polars.polars._allocator\0";

/// 0: not decided, 1: deciding (this thread's lookup allocates through `System`), 2: decided.
static STATE: AtomicU8 = AtomicU8::new(0);
static TABLE: AtomicPtr<Capsule> = AtomicPtr::new(std::ptr::null_mut());

pub struct PolarsAllocator;

impl PolarsAllocator {
    /// The capsule's table, or `None` for the system allocator.
    #[inline]
    fn table(&self) -> Option<&'static Capsule> {
        match STATE.load(Ordering::Acquire) {
            2 => unsafe { TABLE.load(Ordering::Acquire).as_ref() },
            _ => self.decide(),
        }
    }

    #[cold]
    fn decide(&self) -> Option<&'static Capsule> {
        if STATE
            .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            // Another thread is deciding (or this one, re-entered while importing): wait for it,
            // unless it is this thread, which must not wait on itself.
            if DECIDING.with(|d| d.get()) {
                return None;
            }
            while STATE.load(Ordering::Acquire) != 2 {
                std::hint::spin_loop();
            }
            return unsafe { TABLE.load(Ordering::Acquire).as_ref() };
        }
        DECIDING.with(|d| d.set(true));
        let found = unsafe {
            if pyo3::ffi::Py_IsInitialized() == 0 {
                std::ptr::null_mut()
            } else {
                let g = pyo3::ffi::PyGILState_Ensure();
                let p = pyo3::ffi::PyCapsule_Import(NAME.as_ptr() as *const c_char, 0);
                if p.is_null() {
                    pyo3::ffi::PyErr_Clear();
                }
                pyo3::ffi::PyGILState_Release(g);
                p as *mut Capsule
            }
        };
        TABLE.store(found, Ordering::Release);
        STATE.store(2, Ordering::Release);
        DECIDING.with(|d| d.set(false));
        unsafe { found.as_ref() }
    }
}

thread_local! {
    static DECIDING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

// While this thread decides, its own allocations (none are expected: the import runs in Python's
// allocator) would come from `System`; the decision is made before any block of ours exists.
unsafe impl GlobalAlloc for PolarsAllocator {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        match self.table() {
            Some(t) => (t.alloc)(l.size(), l.align()),
            None => System.alloc(l),
        }
    }

    #[inline]
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        match self.table() {
            Some(t) => (t.dealloc)(p, l.size(), l.align()),
            None => System.dealloc(p, l),
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        match self.table() {
            Some(t) => (t.alloc_zeroed)(l.size(), l.align()),
            None => System.alloc_zeroed(l),
        }
    }

    #[inline]
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        match self.table() {
            Some(t) => (t.realloc)(p, l.size(), l.align(), new),
            None => System.realloc(p, l, new),
        }
    }
}
