//! The module's heap: dlmalloc (the allocator std uses on wasm32) over a system layer that grows
//! linear memory geometrically.
//!
//! std's wasm allocator asks `memory.grow` for exactly the pages each new chunk needs, so a call
//! that builds a few hundred megabytes grows memory thousands of times. V8 treats each growth as
//! new external memory and answers it with a full garbage collection of the embedder's JS heap
//! (`--trace-gc`: hundreds of Mark-Compacts inside one `compressJson` call), whose cost grows
//! with the host's heap: compress was superlinear in Node while linear natively. Growing by at
//! least a quarter of the current memory makes the number of growths logarithmic in the peak
//! size, at most a quarter of memory left unused. Everything else (bins, coalescing, alignment)
//! is dlmalloc's, unchanged.
//!
//! `unsafe` code (`#![allow(unsafe_code)]` in this module): a global allocator is an unsafe
//! trait, and dlmalloc's entry points are unsafe; each use says why it is sound.

#![allow(unsafe_code)]

use core::arch::wasm32;
use core::cell::UnsafeCell;
use core::ptr;
use std::alloc::{GlobalAlloc, Layout};

use dlmalloc::{Allocator, Dlmalloc};

/// Bytes in one wasm page.
const PAGE: usize = 64 * 1024;
/// The smallest growth, in pages (1 MiB): small heaps do not grow a page at a time either.
const MIN_GROW_PAGES: usize = 16;

/// Hands dlmalloc fresh linear memory, growing by at least a quarter of the current size.
struct GrowingMemory;

/// How many pages to grow by when `need` bytes are asked for and memory has `current` pages:
/// what is asked, but at least a quarter of `current` and at least [`MIN_GROW_PAGES`].
fn pages_to_grow(need: usize, current: usize) -> usize {
    need.div_ceil(PAGE).max(current / 4).max(MIN_GROW_PAGES)
}

unsafe impl Allocator for GrowingMemory {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        let exact = size.div_ceil(PAGE);
        let wanted = pages_to_grow(size, wasm32::memory_size(0));
        // Near the 4 GiB limit the geometric step may not fit where the exact one still does.
        for pages in [wanted, exact] {
            let prev = wasm32::memory_grow(0, pages);
            if prev != usize::MAX {
                let base = prev * PAGE;
                let len = pages * PAGE;
                // The region may end at the top of the address space: a Rust pointer must not
                // wrap to 0, so the last bytes are not handed out (as std's layer does).
                let len = if base.wrapping_add(len) == 0 {
                    len - 16
                } else {
                    len
                };
                return (base as *mut u8, len, 0);
            }
        }
        (ptr::null_mut(), 0, 0)
    }

    fn remap(&self, _ptr: *mut u8, _old: usize, _new: usize, _can_move: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _ptr: *mut u8, _old: usize, _new: usize) -> bool {
        false
    }

    fn free(&self, _ptr: *mut u8, _size: usize) -> bool {
        false
    }

    fn can_release_part(&self, _flags: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        PAGE
    }
}

/// The global allocator of the wasm module.
struct Heap(UnsafeCell<Dlmalloc<GrowingMemory>>);

// SAFETY: the module is built without the `atomics` target feature, so it runs on one thread
// (each Web Worker instantiates its own module with its own memory); no two calls into the heap
// can overlap.
unsafe impl Sync for Heap {}

#[cfg(not(target_feature = "atomics"))]
#[global_allocator]
static HEAP: Heap = Heap(UnsafeCell::new(Dlmalloc::new_with_allocator(GrowingMemory)));

// SAFETY: each method forwards to dlmalloc with the layout it was given; the `Sync` impl above
// says why the exclusive access through the cell is sound.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).malloc(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        (*self.0.get()).calloc(layout.size(), layout.align())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        (*self.0.get()).free(ptr, layout.size(), layout.align())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size)
    }
}
