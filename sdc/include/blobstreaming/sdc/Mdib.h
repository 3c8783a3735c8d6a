#pragma once
/// A BICEPS 2017 MDIB (IEEE 11073-10207) held in memory: descriptors and
/// states, looked up by handle and served as XML fragments.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace blobstreaming::sdc {

/// One metric value of a change (set_metrics): a number for a
/// NumericMetricState, text for a StringMetricState / EnumStringMetricState.
struct MetricUpdate {
    std::string handle;
    double number = 0;
    std::string text;
    bool is_text = false;

    static MetricUpdate numeric(std::string handle, double value) { return {std::move(handle), value, {}, false}; }
    static MetricUpdate string(std::string handle, std::string value)
    {
        return {std::move(handle), 0, std::move(value), true};
    }
};

/// A metric descriptor to create at run time (Mdib::add_metric): a
/// NumericMetricDescriptor or StringMetricDescriptor with its state.
struct MetricDescriptorSpec {
    /// Handle of the new descriptor; must not name any descriptor or state yet.
    std::string handle;
    /// NumericMetricDescriptor (Resolution required) or StringMetricDescriptor.
    bool numeric = true;
    /// pm:Type/@Code (empty: no pm:Type) and its ConceptDescription (empty: none).
    std::string type_code;
    std::string type_text;
    /// pm:Unit/@Code (required by BICEPS; e.g. 262656 MDC_DIM_DIMLESS) and its ConceptDescription.
    std::string unit_code = "262656";
    std::string unit_text;
    std::string metric_category = "Msrmt";     ///< Unspec, Msrmt, Clc, Set, Preset, Rcmm
    std::string metric_availability = "Cont";  ///< Intr, Cont
    std::string safety_classification;         ///< empty: absent; Inf, MedA, MedB, MedC
    std::string resolution = "1";              ///< numeric only: xsd:decimal
};

/// Changes to an existing metric descriptor (Mdib::update_metric).
struct MetricDescriptorChange {
    /// Attributes to set on the descriptor: MetricCategory, MetricAvailability,
    /// SafetyClassification, DerivationMethod, Resolution (numeric only).
    std::vector<std::pair<std::string, std::string>> attributes;
    /// New pm:Unit/@Code; empty: the unit stays. `unit_text` replaces its
    /// ConceptDescription when the code changes (empty: none).
    std::string unit_code;
    std::string unit_text;
};

/// Thread-safe: every member may be called from any thread. The provider's I/O
/// thread reads while the application updates metrics with set_metric().
///
/// Loading accepts a document that contains a participant-model `MdDescription`
/// anywhere (usually `msg:GetMdibResponse/msg:Mdib`), with or without `MdState`.
/// Descriptors without a state get a default one, as sdc11073 does
/// (ActivationState On, OperatingMode En, ...); each context descriptor gets
/// one context state "<descriptor handle>.state" with ContextAssociation No.
class Mdib {
public:
    /// Throws SdcError(invalid_mdib) naming the file and the reason.
    static Mdib load_file(const std::string& path);
    /// `what` names the source in error messages.
    static Mdib load_string(const std::string& xml, const std::string& what);

    Mdib(Mdib&&) noexcept;
    Mdib& operator=(Mdib&&) noexcept;
    ~Mdib();

    /// urn:uuid, fixed for the life of this object.
    std::string sequence_id() const;
    /// Starts at the file's MdibVersion (or 0); +1 per update.
    std::uint64_t mdib_version() const;
    std::size_t descriptor_count() const;
    std::size_t state_count() const;
    bool has_descriptor(const std::string& handle) const;
    /// Descriptor handles of the single states, in document order.
    std::vector<std::string> state_handles() const;

    /// The serialized `pm:State` elements for `handles` (empty: all), each
    /// carrying the namespace declarations it needs, concatenated. A handle
    /// may name a descriptor or a context state. Throws
    /// SdcError(unknown_handle) for a handle that names neither.
    /// `version` receives the MdibVersion the fragment belongs to.
    std::string states_xml(const std::vector<std::string>& handles, std::uint64_t& version) const;
    /// The serialized `pm:Mds` elements (empty: all; otherwise the MDSs that
    /// contain the referenced descriptors); unknown handles throw as above.
    /// `description_attributes`, when given, receives description_attributes()
    /// at the same MdibVersion.
    std::string mds_xml(const std::vector<std::string>& handles, std::uint64_t& version,
                        std::string* description_attributes = nullptr) const;
    /// Attributes of the MdDescription element (e.g. ` DescriptionVersion="8"`), ready to insert.
    std::string description_attributes() const;

    /// Sets the value of a NumericMetricState (MetricValue/@Value, validity
    /// Vld, DeterminationTime now), increments StateVersion and MdibVersion.
    /// Throws SdcError(unknown_handle / not_a_metric).
    void set_metric(const std::string& handle, double value);
    /// Same for a StringMetricState / EnumStringMetricState.
    void set_metric(const std::string& handle, const std::string& value);
    /// Several metrics as one change: every handle is checked first (nothing
    /// changes if one throws), then each state's StateVersion and the
    /// MdibVersion once. Returns the changed states serialized as
    /// `msg:MetricState` elements (the report parts of an
    /// EpisodicMetricReport, each declaring the namespaces it needs);
    /// `version` receives the new MdibVersion.
    std::string set_metrics(const std::vector<MetricUpdate>& updates, std::uint64_t& version);

    // Description changes (BICEPS DescriptionModificationReport). Each call
    // checks everything first (nothing changes when it throws), then changes
    // the description as one MDIB change: MdibVersion +1, the MdDescription's
    // DescriptionVersion +1. It returns the report parts (`msg:ReportPart`
    // elements, each declaring the namespaces it needs) in the order
    // sdc11073 sends them (Upt, Crt, Del); `version` receives the new MdibVersion.

    /// Adds a metric descriptor and its state (StateVersion 0, no value)
    /// as the last child of channel `parent`; the channel's DescriptorVersion
    /// (and its state's) goes up by one, as sdc11073's provider does. A
    /// handle that existed before continues its versions. Throws
    /// SdcError(unknown_handle) for an unknown parent, invalid_argument for a
    /// parent that is not a channel or a bad field, already_exists for a
    /// handle in use.
    std::string add_metric(const std::string& parent, const MetricDescriptorSpec& spec, std::uint64_t& version);
    /// Changes a metric descriptor: DescriptorVersion +1, its state's
    /// DescriptorVersion follows and StateVersion +1. Throws
    /// SdcError(unknown_handle), not_a_metric, or invalid_argument for an
    /// attribute that cannot be set, a bad value, or no change at all.
    std::string update_metric(const std::string& handle, const MetricDescriptorChange& change, std::uint64_t& version);
    /// Removes a metric descriptor and its state; the parent channel's
    /// DescriptorVersion goes up by one. Throws SdcError(unknown_handle / not_a_metric).
    std::string remove_metric(const std::string& handle, std::uint64_t& version);

    /// GetMdib's content at one MdibVersion: the MDSs and the states (as
    /// mds_xml({}) and states_xml({})) and the MdDescription's attributes.
    void mdib_xml(std::string& mds, std::string& states, std::string& description_attributes,
                  std::uint64_t& version) const;

private:
    struct Impl;
    explicit Mdib(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace blobstreaming::sdc
