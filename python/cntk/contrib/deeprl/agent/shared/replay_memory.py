"""Experience replay memory, uniform or prioritized (Schaul et al. 2016)."""

import random
from collections import namedtuple

#: One stored experience. ``next_state`` is None for the final transition of an
#: episode; ``priority`` is only meaningful for prioritized replay.
_Transition = namedtuple(
    'Transition', ['state', 'action', 'reward', 'next_state', 'priority'])


class ReplayMemory:
    """A bounded store of transitions; once full, the oldest is overwritten.

    With ``prioritized=True`` transitions are sampled with probability
    proportional to their priority. They are then kept in a *sum tree* laid out
    in the flat list ``_memory``: entries ``0 .. capacity-2`` are the internal
    nodes (each the sum of the priorities below it, node ``i`` having children
    ``2i+1`` and ``2i+2``) and the following ``capacity`` entries are the
    leaves, i.e. the transitions. Sampling and updates are then O(log capacity).
    Without prioritization ``_memory`` is just the list of transitions.

    :meth:`sample_minibatch` returns ``(position, transition)`` pairs; the
    positions are what :meth:`update_priority` expects.
    """

    def __init__(self, capacity, prioritized=False):
        self._capacity = capacity
        self._use_prioritized_replay = prioritized
        # Index among the leaves of the slot written next (cycles through).
        self._position = 0
        self._first_leaf = capacity - 1 if prioritized else 0
        self._memory = [0] * self._first_leaf

    def size(self):
        """Number of transitions currently stored."""
        return len(self._memory) - self._first_leaf

    def store(self, *args):
        """Store ``_Transition(*args)`` (state, action, reward, next_state,
        priority), evicting the oldest transition when full."""
        transition = _Transition(*args)
        slot = self._first_leaf + self._position
        if slot == len(self._memory):
            self._memory.append(transition)
            old_priority = 0
        else:
            old_priority = self._memory[slot].priority
            self._memory[slot] = transition
        self._position = (self._position + 1) % self._capacity
        if self._use_prioritized_replay:
            self._propagate(slot, transition.priority - old_priority)

    def update_priority(self, map_from_position_to_priority):
        """Give new priorities: ``{position: priority}`` with positions from
        :meth:`sample_minibatch`. Ignored for uniform replay."""
        if not self._use_prioritized_replay:
            return
        for position, priority in map_from_position_to_priority.items():
            old = self._memory[position]
            self._memory[position] = old._replace(priority=priority)
            self._propagate(position, priority - old.priority)

    def sample_minibatch(self, batch_size):
        """Draw ``batch_size`` transitions as ``(position, transition)`` pairs.

        Uniform replay draws without replacement (everything when fewer are
        stored). Prioritized replay splits the total priority into
        ``batch_size`` equal ranges and draws one transition from each
        (stratified sampling), so a transition may come back more than once.
        """
        count = self.size()
        if count == 0:
            return []
        if self._use_prioritized_replay:
            total = self._memory[0] if self._first_leaf > 0 else self._memory[0].priority
            stride = total / batch_size
            positions = [self._find(random.uniform(i * stride, min((i + 1) * stride, total)))
                         for i in range(batch_size)]
        elif count <= batch_size:
            positions = list(range(count))
        else:
            positions = random.sample(range(count), batch_size)
        return [(p, self._memory[p]) for p in positions]

    def _propagate(self, node, delta):
        """Add ``delta`` to every ancestor of ``node``."""
        while node > 0:
            node = (node - 1) // 2
            self._memory[node] += delta

    def _weight(self, node):
        return self._memory[node] if node < self._first_leaf else self._memory[node].priority

    def _find(self, mass):
        """Leaf whose cumulative priority range contains ``mass``."""
        node = 0
        while 2 * node + 1 < len(self._memory):
            left, right = 2 * node + 1, 2 * node + 2
            left_mass = self._weight(left)
            # A subtree with no mass (e.g. leaves not filled yet) is never
            # entered; a missing right child means everything lies to the left.
            if right >= len(self._memory) or (0 < left_mass and mass <= left_mass):
                node = left
            else:
                mass -= left_mass
                node = right
        return node
