#pragma once
/// What every listening port of ours does when the process runs out of file
/// descriptors: the connections pending in the backlog would wait there
/// until their own timeout and keep the port readable (a busy loop), so a
/// few descriptors are held in reserve, given up to accept and close them,
/// and taken again. Used by the data port, the metrics endpoint, the SDC
/// provider's HTTP server and the DICOM gateway's ports.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>

namespace blobstreaming {

/// accept(2)'s errno values that say the process or the system is out of
/// descriptors or kernel memory (not a fault of the one connection).
bool out_of_descriptors(int err) noexcept;

class DescriptorReserve {
public:
    /// Opens the reserve (as many of its descriptors as the limit allows).
    DescriptorReserve() noexcept;
    ~DescriptorReserve();
    DescriptorReserve(const DescriptorReserve&) = delete;
    DescriptorReserve& operator=(const DescriptorReserve&) = delete;

    /// Opens those descriptors of the reserve that are not open (some may
    /// have been freed since).
    void refill() noexcept;
    /// How many descriptors the reserve holds now.
    std::size_t held() const noexcept;
    /// Asks the IdleDescriptors holders to close theirs, gives up the
    /// reserve, accepts and closes at most `limit` connections pending on
    /// `listener` (never blocking, whether or not the listener is in
    /// non-blocking mode), and takes the reserve again. Returns how many
    /// connections were closed; 0 when the reserve held nothing.
    int shed_pending(int listener, int limit) noexcept;

private:
    /// Two, because another thread may take a freed number first and keep it
    /// (a connection to the Naming Service): one is then still there.
    std::array<int, 2> fds_{-1, -1};
};

/// Descriptors a process keeps open only to save work later (a FileStore's
/// recently read files): when the process runs out, their holders close
/// what they can. DescriptorReserve::shed_pending asks them first, and a
/// holder whose own open fails with out_of_descriptors() may ask too.
/// Any thread. A holder's release runs on the asking thread, with this
/// registry locked: it must not add, remove or ask in turn.
class IdleDescriptors {
public:
    /// Closes what the holder can spare; returns how many it dropped.
    using Release = std::function<std::size_t()>;

    /// Keeps its release registered while it lives; once its destructor
    /// has returned, the release is not running and never runs again.
    class Registration {
    public:
        Registration() = default;
        Registration(Registration&& other) noexcept : id_(other.id_) { other.id_ = 0; }
        Registration& operator=(Registration&& other) noexcept;
        ~Registration();

    private:
        friend class IdleDescriptors;
        explicit Registration(std::uint64_t id) noexcept : id_(id) {}
        std::uint64_t id_ = 0;
    };

    [[nodiscard]] static Registration add(Release release);
    /// Asks every registered holder; returns how many descriptors they dropped.
    static std::size_t release_all() noexcept;
};

}  // namespace blobstreaming
