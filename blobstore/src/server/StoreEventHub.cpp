#include "StoreEventHub.h"

namespace blobstreaming::server {
namespace {

std::string kinds_text(unsigned kinds)
{
    return kinds == kEveryEventKind                          ? "committed, removed"
           : kinds == event_bit(StoreEvent::Kind::committed) ? "committed"
                                                             : "removed";
}

}  // namespace

StoreEventHub::StoreEventHub(std::string store, daemon::NoticeDispatcher& dispatcher, daemon::EventLimits limits)
    : daemon::EventHub<StoreEvent>(
          daemon::EventSource{"store events", "the events of store \"" + store + "\"", "store", kinds_text},
          dispatcher, limits),
      store_(std::move(store))
{}

}  // namespace blobstreaming::server
