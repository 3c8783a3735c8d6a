#pragma once
/// The daemon's entry BlobStreaming/Stores/NAME in the Naming Service: who
/// holds it, claiming it at start and keeping it during upkeep — never
/// taking it from another daemon of the same name that still answers.

#include <omniORB4/CORBA.h>
#include <omniORB4/Naming.hh>

#include <chrono>
#include <string>

namespace blobstreaming::daemon {

/// Who the entry names, as seen from this daemon.
struct EntryHolder {
    enum Kind {
        none,       ///< no entry (or a nil one)
        self,       ///< this daemon
        answers,    ///< another daemon, which answers
        silent,     ///< another daemon that accepted the connection but did not answer in time (stopped, hung)
        gone,       ///< another daemon that is gone (connection refused, object unknown to its server)
        plaintext,  ///< (this daemon has TLS) a registrant that does not require TLS: not called
    };
    Kind kind = none;
    std::string address;  ///< its control endpoint HOST:PORT (answers, silent, gone, plaintext)
    std::string why;      ///< silent, gone: what the probe saw
};

/// Main thread only. `bound`: how long a probe of another daemon may take.
class StoreEntry {
public:
    StoreEntry(std::string name, std::string naming_url, std::chrono::milliseconds bound);

    /// Who holds the entry now. `self` may be nil (before this daemon has a
    /// reference). Throws CORBA exceptions of the Naming Service.
    EntryHolder holder(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self) const;

    /// At start, before anything is opened: throws Error(Errc::store_busy)
    /// naming the store and the live daemon's address when the entry names
    /// a daemon that answers or is silent.
    void check_free(CosNaming::NamingContext_ptr naming) const;

    /// At start: binds `self`, checking again (another daemon may have
    /// started meanwhile: Errc::store_busy). Taking the entry from a daemon
    /// that is gone, or from a plaintext registrant, is logged (WARN).
    void claim(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self);

    /// Upkeep (every --naming-check): binds `self` again when the entry is
    /// missing or names a daemon that is gone (logged); leaves a daemon of
    /// the same name that answers (or is silent) alone, logged once while it
    /// lasts. Throws CORBA exceptions of the Naming Service.
    void keep(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self);

    /// At stop: removes the entry only while it names this daemon (another
    /// daemon's entry stays). Logs, never throws.
    void release(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self) noexcept;

private:
    std::string in_use(const EntryHolder& h) const;
    void bind(CosNaming::NamingContext_ptr naming, CORBA::Object_ptr self, const EntryHolder& replaced,
              const char* when);

    std::string name_;
    std::string naming_url_;
    std::chrono::milliseconds bound_;
    bool yielded_ = false;  ///< keep() left a live daemon alone (logged once)
};

}  // namespace blobstreaming::daemon
