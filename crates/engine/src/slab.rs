//! A typed arena with a free list: O(1) insert and remove, no per-item heap
//! allocation once warmed up. Simulated packets live here while in flight.

/// A handle into a [`Slab`]. Plain index; cheap to copy into events.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SlabKey(pub u32);

enum Slot<T> {
    Occupied(T),
    Free { next: u32 },
}

const NIL: u32 = u32::MAX;

/// An arena of `T` addressed by [`SlabKey`].
pub struct Slab<T> {
    slots: Vec<Slot<T>>,
    free_head: u32,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Slab<T> {
    pub fn new() -> Self {
        Slab { slots: Vec::new(), free_head: NIL, len: 0 }
    }

    pub fn with_capacity(n: usize) -> Self {
        Slab { slots: Vec::with_capacity(n), free_head: NIL, len: 0 }
    }

    /// Number of live items.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Stores `value` and returns its key; reuses a freed slot when there is one.
    #[inline]
    pub fn insert(&mut self, value: T) -> SlabKey {
        self.len += 1;
        if self.free_head != NIL {
            let k = self.free_head;
            match self.slots[k as usize] {
                Slot::Free { next } => self.free_head = next,
                Slot::Occupied(_) => unreachable!("free list points at an occupied slot"),
            }
            self.slots[k as usize] = Slot::Occupied(value);
            SlabKey(k)
        } else {
            let k = self.slots.len() as u32;
            assert!(k != NIL, "slab full");
            self.slots.push(Slot::Occupied(value));
            SlabKey(k)
        }
    }

    /// Removes and returns the item at `key`.
    ///
    /// # Panics
    /// If `key` is not live (a double free is a bug).
    #[inline]
    pub fn remove(&mut self, key: SlabKey) -> T {
        let slot = std::mem::replace(&mut self.slots[key.0 as usize], Slot::Free { next: self.free_head });
        match slot {
            Slot::Occupied(v) => {
                self.free_head = key.0;
                self.len -= 1;
                v
            }
            Slot::Free { .. } => panic!("slab key {key:?} removed twice"),
        }
    }

    /// The live items, in slot order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Occupied(v) => Some(v),
            Slot::Free { .. } => None,
        })
    }

    #[inline]
    pub fn get(&self, key: SlabKey) -> Option<&T> {
        match self.slots.get(key.0 as usize) {
            Some(Slot::Occupied(v)) => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freed_slots_are_reused_before_the_arena_grows() {
        let mut s = Slab::new();
        let a = s.insert('a');
        let _b = s.insert('b');
        assert_eq!(s.remove(a), 'a');
        let c = s.insert('c');
        assert_eq!(c, a);
        assert_eq!(s.len(), 2);
        assert_eq!(s.get(c), Some(&'c'));
    }

    #[test]
    #[should_panic(expected = "removed twice")]
    fn removing_a_key_twice_panics() {
        let mut s = Slab::new();
        let a = s.insert(1);
        s.remove(a);
        s.remove(a);
    }
}
