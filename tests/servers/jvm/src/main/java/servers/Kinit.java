package servers;

import java.io.File;

import org.apache.kerby.kerberos.kerb.client.KrbClient;
import org.apache.kerby.kerberos.kerb.type.ticket.TgtTicket;

/**
 * {@code kinit -kt KEYTAB -c CCACHE PRINCIPAL} for machines without MIT's kinit: asks the
 * KDC of KRB5_CONF for a ticket-granting ticket with the keytab's key and stores it in a
 * credential cache file that MIT's GSSAPI library (KRB5CCNAME=FILE:CCACHE) reads, the way
 * a user's {@code kinit} does. Uses Apache Kerby, the MiniKdc's own Kerberos library.
 *
 * <pre>java -cp ... servers.Kinit KRB5_CONF KEYTAB PRINCIPAL CCACHE</pre>
 */
public final class Kinit {
    private Kinit() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 4) {
            System.err.println("usage: servers.Kinit KRB5_CONF KEYTAB PRINCIPAL CCACHE");
            System.exit(2);
        }
        // KrbClient reads "krb5.conf" from a directory
        KrbClient client = new KrbClient(new File(args[0]).getAbsoluteFile().getParentFile());
        client.setAllowUdp(false);
        client.init();
        TgtTicket tgt = client.requestTgt(args[2], new File(args[1]));
        client.storeTicket(tgt, new File(args[3]));
        System.out.println(tgt.getClientPrincipal().getName());
    }
}
