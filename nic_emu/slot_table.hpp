// Objects found by their number the way a ConnectX finds them: a QP's context by the low bits
// of its QPN, a memory key's entry by the key's index (its upper 24 bits, mlx5's mkey index; the
// low byte varies between registrations). The number's index bits pick a slot and the entry
// there is compared with the whole number, so a stale or forged number finds nothing: one load
// where a hash table would divide, load a bucket, then follow it to a node. Every received packet
// finds its QP here and every WRITE, READ and gather its memory region.
//
// Numbers are handed out by their owner; free() says whether a number's slot may take it. The
// table grows to the highest slot used, at most `Traits::slots` (the device's limit for that
// object), so a NIC with a few QPs keeps a short table. Growing moves the entries: a pointer from
// find() is good until the next insert().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rocefab::nic {

// Traits: `slots`, a power of two, the most entries that may live at once; `index_shift`, where
// a number's index starts; `number(entry)`, the number an entry holds, 0 for an empty slot (no
// object is ever numbered 0).
template <typename Entry, typename Traits> class slot_table {
public:
    static_assert((Traits::slots & (Traits::slots - 1)) == 0, "slots must be a power of two");

    // Whether a new object may take `number`: its slot is empty.
    bool free(std::uint32_t number) const {
        const std::size_t i = slot(number);
        return i >= _entries.size() || Traits::number(_entries[i]) == 0;
    }
    Entry* find(std::uint32_t number) {
        const std::size_t i = slot(number);
        if (i >= _entries.size() || number == 0 || Traits::number(_entries[i]) != number) return nullptr;
        return &_entries[i];
    }
    const Entry* find(std::uint32_t number) const { return const_cast<slot_table*>(this)->find(number); }
    // Takes `entry`, whose number must be free().
    void insert(Entry entry) {
        const std::size_t i = slot(Traits::number(entry));
        if (i >= _entries.size()) _entries.resize(i + 1);
        _entries[i] = std::move(entry);
        ++_count;
    }
    void erase(std::uint32_t number) {
        if (Entry* e = find(number)) {
            *e = Entry{};
            --_count;
        }
    }
    std::size_t size() const { return _count; }
    // f(entry) for each entry that is there, in slot order.
    template <typename F> void for_each(F&& f) const {
        for (const Entry& e : _entries)
            if (Traits::number(e) != 0) f(e);
    }

private:
    static std::size_t slot(std::uint32_t number) { return (number >> Traits::index_shift) & (Traits::slots - 1); }

    std::vector<Entry> _entries;
    std::size_t _count = 0;
};

} // namespace rocefab::nic
