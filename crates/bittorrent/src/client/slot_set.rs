//! A set of connection slots as a bitset: the client's answer to "which
//! connections are in this state" without reading every connection.

/// Slot numbers, one bit each; iterated in ascending order, as a scan of the
/// connection table meets them.
#[derive(Clone, Debug, Default)]
pub(crate) struct SlotSet {
    words: Vec<u64>,
}

impl SlotSet {
    pub fn insert(&mut self, slot: u32) {
        let w = slot as usize / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (slot % 64);
    }

    pub fn remove(&mut self, slot: u32) {
        if let Some(w) = self.words.get_mut(slot as usize / 64) {
            *w &= !(1 << (slot % 64));
        }
    }

    #[inline]
    pub fn contains(&self, slot: u32) -> bool {
        self.words.get(slot as usize / 64).is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }

    /// Calls `f` with each slot in the set, lowest first.
    #[inline]
    pub fn for_each(&self, mut f: impl FnMut(u32)) {
        for (i, &word) in self.words.iter().enumerate() {
            let mut w = word;
            while w != 0 {
                f(i as u32 * 64 + w.trailing_zeros());
                w &= w - 1;
            }
        }
    }

    /// Empties the set, with room for slots below `64 * words`.
    pub fn reset(&mut self, words: usize) {
        self.words.clear();
        self.words.resize(words, 0);
    }

    /// Adds the slots of `bits`, one bit per slot as in the set's own words
    /// (those beyond its room are left out: see [`SlotSet::reset`]).
    pub fn add_words(&mut self, bits: &[u64]) {
        for (w, &b) in self.words.iter_mut().zip(bits) {
            *w |= b;
        }
    }

    /// Appends the slots in the set to `out`, lowest first.
    pub fn extend_into(&self, out: &mut Vec<u32>) {
        self.for_each(|s| out.push(s));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_out_lowest_first_and_removed_ones_do_not() {
        let mut s = SlotSet::default();
        for x in [130, 3, 64, 0, 63, 129] {
            s.insert(x);
        }
        s.remove(129);
        s.remove(500); // beyond the words: nothing to do
        let mut out = vec![7];
        s.extend_into(&mut out);
        assert_eq!(out, vec![7, 0, 3, 63, 64, 130]);
        let mut seen = vec![];
        s.for_each(|x| seen.push(x));
        assert_eq!(seen, out[1..]);
        assert!(s.contains(64) && !s.contains(129) && !s.contains(1000));
    }

    #[test]
    fn a_reset_set_takes_the_slots_of_added_words_within_its_room() {
        let mut s = SlotSet::default();
        s.insert(5);
        s.reset(2);
        assert!(!s.contains(5), "reset empties");
        s.add_words(&[0b1010, 1]);
        s.add_words(&[0b0001, 0, 1 << 7]);
        let mut out = vec![];
        s.extend_into(&mut out);
        assert_eq!(out, vec![0, 1, 3, 64], "slot 135 lies beyond the room of two words");
    }
}
