//! filter-bench's allocator: the system allocator, with every allocation of 2 MiB or more
//! advised onto transparent huge pages (`madvise(MADV_HUGEPAGE)`, Linux).
//!
//! Why: a 10M-key filter (~12.5 MB) queried at random touches ~3,000 4 KiB pages, more than the
//! TLB holds, so on 4 KiB pages a query's cost is partly a page walk — and under a hypervisor
//! that walk's cost depends on how the host backs each region, which moved single rows of the
//! sweep by 2–5× from run to run. On huge pages every contender's filter (siftdb's and the
//! comparison crates', all allocated through here) is reached the same way, and the rows
//! compare the queries themselves. With THP off (`/sys/kernel/mm/transparent_hugepage/enabled`
//! = `never`) the advice does nothing.

use std::alloc::{GlobalAlloc, Layout, System};

/// Allocations at least this large are advised onto huge pages (one x86-64 huge page).
pub const HUGE_PAGE: usize = 2 << 20;

/// See the module documentation.
#[derive(Debug, Clone, Copy, Default)]
pub struct HugePageAlloc;

// SAFETY: every call is forwarded to `System` with the caller's pointer and layout unchanged,
// so `System`'s guarantees carry over; the advice never changes an allocation's contents,
// size or validity (only which page size the kernel backs it with).
unsafe impl GlobalAlloc for HugePageAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which `System` shares.
        let ptr = unsafe { System.alloc(layout) };
        advise_huge(ptr, layout.size());
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        advise_huge(ptr, layout.size());
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` (through this allocator) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract on `new_size`.
        let ptr = unsafe { System.realloc(ptr, layout, new_size) };
        advise_huge(ptr, new_size);
        ptr
    }
}

/// Advises the whole huge pages inside `[ptr, ptr + len)` onto huge pages (nothing for a null
/// `ptr`, a short allocation, or off Linux). Failure is ignored: it is advice.
fn advise_huge(ptr: *mut u8, len: usize) {
    if ptr.is_null() || len < HUGE_PAGE {
        return;
    }
    let begin = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + len) / HUGE_PAGE * HUGE_PAGE;
    if end <= begin {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `[begin, end)` lies inside the allocation `ptr` heads, which is mapped and ours;
    // MADV_HUGEPAGE only tells the kernel which page size to back it with, and keeps its bytes.
    unsafe {
        libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_HUGEPAGE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_and_small_allocations_keep_their_bytes() {
        for size in [64, HUGE_PAGE - 1, HUGE_PAGE, 3 * HUGE_PAGE + 12_345] {
            let layout = Layout::from_size_align(size, 64).unwrap();
            // SAFETY: a non-zero size; the pointer is checked, written and read only inside
            // the allocation, then freed with its layout.
            unsafe {
                let ptr = HugePageAlloc.alloc_zeroed(layout);
                assert!(!ptr.is_null());
                assert_eq!(*ptr.add(size - 1), 0);
                for i in (0..size).step_by(4096) {
                    *ptr.add(i) = (i % 251) as u8;
                }
                let grown = HugePageAlloc.realloc(ptr, layout, size * 2);
                assert!(!grown.is_null());
                for i in (0..size).step_by(4096) {
                    assert_eq!(*grown.add(i), (i % 251) as u8);
                }
                HugePageAlloc.dealloc(grown, Layout::from_size_align(size * 2, 64).unwrap());
            }
        }
    }
}
