# transporter/src/server, transporter/src/corba servants and the blobstored daemon.
