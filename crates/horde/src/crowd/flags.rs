//! One agent's flags byte, which means different things during a step and between steps.

/// One agent's flags: a byte, 1 per agent.
///
/// Always: bit 0, alive (cleared when the agent is removed, until the next sort drops its
/// slot); bit 1, stuck (set by the step, cleared when the agent is given a new group).
/// Between steps, bits 2-7 carry the agent's clearance into the next step, as a level in
/// multiples of the crowd's `clearance_unit`, rounded down ([`Self::clearance_level`]). During
/// a step's collision passes those bits are free (the clearances live in the sort order's
/// buffer) and bits 2 and 3 mean pushed by the last pass and marked for the next one.
///
/// The eight-lane code reads and writes eight agents' flags as the bytes of one word
/// ([`Self::word`], and the masks `*_BIT`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct AgentFlags(u8);

impl AgentFlags {
    /// Bit of a living agent.
    pub(crate) const ALIVE_BIT: u8 = 1;
    /// Bit of an agent flagged stuck.
    pub(crate) const STUCK_BIT: u8 = 2;
    /// During the collision passes: bit of an agent the last pass pushed.
    pub(crate) const PUSHED_BIT: u8 = 4;
    /// During the collision passes: bit of an agent marked for the next pass.
    pub(crate) const MARKED_BIT: u8 = 8;
    /// Between steps: where the clearance level starts.
    pub(crate) const CLEARANCE_SHIFT: u32 = 2;
    /// The largest clearance level the flags hold.
    pub(crate) const CLEARANCE_LEVELS: f32 = 63.0;

    /// A newly added agent: alive, nothing else known.
    pub(crate) const ALIVE: AgentFlags = AgentFlags(Self::ALIVE_BIT);

    /// The byte.
    #[inline(always)]
    pub(crate) fn bits(self) -> u8 {
        self.0
    }

    /// Flags from their byte.
    #[inline(always)]
    pub(crate) fn from_bits(bits: u8) -> AgentFlags {
        AgentFlags(bits)
    }

    #[inline(always)]
    pub(crate) fn is_alive(self) -> bool {
        self.0 & Self::ALIVE_BIT != 0
    }

    /// The agent was removed: its slot is dropped at the next sort.
    #[inline(always)]
    pub(crate) fn remove(&mut self) {
        self.0 = 0;
    }

    #[inline(always)]
    pub(crate) fn is_stuck(self) -> bool {
        self.0 & Self::STUCK_BIT != 0
    }

    #[inline(always)]
    pub(crate) fn set_stuck(&mut self) {
        self.0 |= Self::STUCK_BIT;
    }

    #[inline(always)]
    pub(crate) fn clear_stuck(&mut self) {
        self.0 &= !Self::STUCK_BIT;
    }

    /// The step's update begins: only the alive bit stays (stuck is decided anew; the
    /// clearance was read, and the passes need the bits).
    #[inline(always)]
    pub(crate) fn begin_update(&mut self) {
        self.0 &= Self::ALIVE_BIT;
    }

    #[inline(always)]
    pub(crate) fn is_pushed(self) -> bool {
        self.0 & Self::PUSHED_BIT != 0
    }

    #[inline(always)]
    pub(crate) fn set_pushed(&mut self) {
        self.0 |= Self::PUSHED_BIT;
    }

    #[inline(always)]
    pub(crate) fn clear_pushed(&mut self) {
        self.0 &= !Self::PUSHED_BIT;
    }

    #[inline(always)]
    pub(crate) fn is_marked(self) -> bool {
        self.0 & Self::MARKED_BIT != 0
    }

    #[inline(always)]
    pub(crate) fn mark(&mut self) {
        self.0 |= Self::MARKED_BIT;
    }

    #[inline(always)]
    pub(crate) fn unmark(&mut self) {
        self.0 &= !Self::MARKED_BIT;
    }

    /// Between steps: the clearance level (0 to 63).
    #[inline(always)]
    pub(crate) fn clearance_level(self) -> u8 {
        self.0 >> Self::CLEARANCE_SHIFT
    }

    /// Keep `level` (0 to 63) as the clearance for the next step, keeping alive and stuck.
    #[inline(always)]
    pub(crate) fn set_clearance_level(&mut self, level: u8) {
        self.0 = self.0 & ((1 << Self::CLEARANCE_SHIFT) - 1) | level << Self::CLEARANCE_SHIFT;
    }

    /// Eight agents' flags as the bytes of one word, in slot order.
    #[inline(always)]
    pub(crate) fn word(eight: &[AgentFlags; 8]) -> u64 {
        u64::from_ne_bytes(eight.map(|f| f.0))
    }

    /// Eight agents' flags from the bytes of one word.
    #[inline(always)]
    pub(crate) fn set_word(eight: &mut [AgentFlags; 8], word: u64) {
        *eight = word.to_ne_bytes().map(AgentFlags);
    }

    /// Four agents' flags as the bytes of one word.
    #[inline(always)]
    pub(crate) fn word4(four: &[AgentFlags; 4]) -> u32 {
        u32::from_ne_bytes(four.map(|f| f.0))
    }

    /// Four agents' flags from the bytes of one word.
    #[inline(always)]
    pub(crate) fn set_word4(four: &mut [AgentFlags; 4], word: u32) {
        *four = word.to_ne_bytes().map(AgentFlags);
    }
}
